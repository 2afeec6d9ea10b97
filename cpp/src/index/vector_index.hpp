// The usearch HNSW index, behind a small interface so that usearch's headers
// are compiled in one translation unit only. Not thread-safe by itself: the
// store serializes changes against searches with its own lock.
//
// Under cos the graph holds int8 vectors (a quarter of f32's bytes): the
// graph search ranks by them, and every score it returns is exact, re-scored
// from the stored f32 vector that the exact source reads (the store's LMDB).
// So the index holds no second f32 copy, and its scores and order are those
// of an f32 index over the same candidates.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agentsensus/options.hpp"
#include "agentsensus/rows.hpp"
#include "format/schema.hpp"
#include "index/similarity.hpp"

namespace agentsensus {

// IndexHeader, the index file's header, is part of the file format (schema.hpp).

// Reads the exact vectors of ids[0..n) into out (n rows); found[i] says
// whether ids[i] has one. Called from any thread that searches.
using ExactSource = std::function<void(const uint64_t* ids, size_t n, float* out, unsigned char* found)>;

class VectorIndex {
public:
    VectorIndex(size_t dim, Metric metric, const IndexParams& params = {});
    ~VectorIndex();
    VectorIndex(const VectorIndex&) = delete;
    VectorIndex& operator=(const VectorIndex&) = delete;

    // Where exact vectors come from for a quantized index (required before
    // the first search or scan of one).
    void set_exact_source(ExactSource source);
    // Whether the graph holds int8 rather than f32 vectors. An index file
    // written before int8 stays f32 until the index is rebuilt.
    bool quantized() const;
    // The largest difference between a component of a vector get returns and
    // the one added (0 for f32).
    float max_error() const;

    // Vectors are already unit length under cos.
    void add(uint64_t id, const float* v);
    // Adds n vectors (rows of vs), on several threads when n is large.
    void add_many(const uint64_t* ids, const float* vs, size_t n);
    void remove(uint64_t id);
    bool contains(uint64_t id) const;
    // Copies the vector the graph holds for id into out (within max_error of
    // the one added); false when absent.
    bool get(uint64_t id, float* out) const;
    size_t size() const;
    void clear();

    // Up to k nearest, best first, with exact scores. A quantized index
    // ranks max(k, expansion_search) candidates by its int8 vectors, then
    // re-scores them exactly and keeps the best k.
    std::vector<Hit> search(const float* q, size_t k) const;

    // A graph candidate with bounds on its exact score (lo == hi: exact).
    struct Bounded {
        uint64_t id;
        float lo, hi;
    };
    // The candidates a graph search at width max(w, expansion_search) ranks,
    // in its order, bounded rather than re-scored: from the int8 copy against
    // the f32 query (about 1% of a unit score) where the copy holds them,
    // else exactly, and those the copy then gains. A caller that needs the
    // exact best few of them scores only what the bounds cannot rule out
    // (exact()); an f32 graph gives exact scores. Ids without a vector (gone
    // since the walk) are left out.
    std::vector<Bounded> walk(const float* q, size_t w) const;
    // Exact scores of ids, in their order; ids without a vector are skipped.
    std::vector<Hit> exact(const float* q, const uint64_t* ids, size_t n) const;
    // The exact best `need` of kept (candidates of one walk), best first,
    // ties to the lower id: what an exact re-score of them all would rank
    // first, reading only those whose upper bound reaches the need-th best
    // lower bound.
    std::vector<Hit> best(const float* q, const std::vector<Bounded>& kept, size_t need) const;

    // The exact k most similar of ids (ascending), best first, with the same
    // scores as similarity() over the stored vectors. Ids the index does not
    // hold are skipped and appended to absent. Long scans go through a
    // compact int8 copy (scan_rows.hpp), made on the first and kept up to date.
    std::vector<Hit> scan(const float* q, const uint64_t* ids, size_t n, size_t k, std::vector<uint64_t>& absent) const;

    // Writes header + index to path atomically (temp file, fsync, rename).
    void save(const std::string& path, const IndexHeader& h) const;
    // Maps a file written by save (checked: magic, header, size, checksum);
    // false (and an empty index) when the file is absent, damaged, or of
    // another shape, why says which. The index serves searches from the page
    // cache (shared with every process that maps it) and opens in the time of
    // one checksum pass; the first change (add, remove) loads it into memory
    // from the mapping.
    bool view(const std::string& path, IndexHeader& h, std::string& why);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace agentsensus
