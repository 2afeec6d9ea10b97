// A compact copy of the index's vectors for exact owner scans: one int8 row
// per vector, scaled by its largest component (a quarter of the f32 bytes).
// An owner scan of many records is bound by memory reads, and usearch's f32
// copy sits behind a hash lookup per id; these rows sit behind an array index.
// Each score comes with a bound on its error, so a caller can re-score
// exactly whatever the bound cannot rule out and stay exact.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "index/similarity.hpp"

namespace agentsensus {

class ScanRows {
public:
    ScanRows(size_t dim, Metric metric);

    // Holds a copy of v under id (replacing one held); false when the id is
    // too far beyond the held ones to index densely (then it is not held).
    bool put(uint64_t id, const float* v);
    void erase(uint64_t id);
    // Ids up to about n are expected (the index holds n vectors): put keeps
    // them even while few rows are held.
    void reserve_ids(uint64_t n) { id_limit_ = std::max(id_limit_, 2 * n); }
    size_t size() const { return live_; }

    // The query, quantized once per scan.
    struct Query {
        std::vector<int8_t> q;
        float scale = 0, err = 0, norm = 0, norm2 = 0;
    };
    Query quantize(const float* q) const;

    // Similarity of the query to id under the metric, within [lo, hi];
    // false when id is not held.
    bool bounds(const Query& q, uint64_t id, float& lo, float& hi) const;
    // Tighter bounds for what bounds() could not rule out: the f32 query
    // against the row, so only the row's rounding is left (about half the
    // error), at the cost of a float product. False when id is not held.
    bool bounds_f32(const float* q, const Query& qq, uint64_t id, float& lo, float& hi) const;
    // Starts fetching id's row (a scan walks ids in order and asks ahead).
    void prefetch(uint64_t id) const;

private:
    struct Meta {
        float scale;  // row value = scale * int8
        float err;    // |v - scale * row|, the quantization error's norm
        float norm;   // |v|
    };
    static constexpr uint32_t kNone = UINT32_MAX;

    size_t dim_;
    Metric metric_;
    size_t live_ = 0;
    uint64_t id_limit_ = 0;
    std::vector<uint32_t> row_of_;  // by id
    std::vector<int8_t> data_;      // dim_ per row
    std::vector<Meta> meta_;
    std::vector<uint32_t> free_;

    void encode(const float* v, int8_t* out, Meta& m) const;
};

}  // namespace agentsensus
