// Small helpers the parts of Store share (store_*.cpp): the metric's name,
// a store's uuid, the finite check of an input vector, the owners' allow-set
// bits, the conflict that unwinds a write transaction, the order of hits, and
// the read of a DUPFIXED table's values under one key.
#pragma once
#include <lmdb.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "index/similarity.hpp"
#include "index/vector_index.hpp"
#include "lmdb/lmdb_env.hpp"

namespace agentsensus {

inline const char* metric_name(Metric m) {
    switch (m) {
        case Metric::cos: return "cos";
        case Metric::ip: return "ip";
        case Metric::l2sq: return "l2sq";
    }
    return "?";
}

inline void random_uuid(unsigned char out[16]) {
    std::random_device rd;
    for (int i = 0; i < 16; i += 4) {
        uint32_t r = rd();
        std::memcpy(out + i, &r, 4);
    }
}

inline bool finite_all(const float* v, size_t n) {
    for (size_t i = 0; i < n; ++i)
        if (!std::isfinite(v[i])) return false;
    return true;
}

inline void set_bit(std::vector<uint64_t>& bits, uint64_t id) {
    size_t w = id >> 6;
    if (w >= bits.size()) bits.resize(std::max(w + 1, bits.size() * 2), 0);
    bits[w] |= uint64_t(1) << (id & 63);
}

inline void clear_bit(std::vector<uint64_t>& bits, uint64_t id) {
    size_t w = id >> 6;
    if (w < bits.size()) bits[w] &= ~(uint64_t(1) << (id & 63));
}

inline bool test_bit(const std::vector<uint64_t>& bits, uint64_t id) {
    size_t w = id >> 6;
    return w < bits.size() && (bits[w] >> (id & 63)) & 1;
}

// Unwinds a write transaction that found a conflict: nothing is written.
struct CommitAbort {};

// Best first; ties by id so answers are deterministic.
inline bool better(const Hit& a, const Hit& b) { return a.score > b.score || (a.score == b.score && a.id < b.id); }

// All u64 values under one key of a DUPFIXED table, a page per call.
inline std::vector<uint64_t> u64_dups(MDB_txn* txn, MDB_dbi dbi, MDB_val key) {
    std::vector<uint64_t> out;
    MDB_val v;
    Cursor c(txn, dbi);
    if (!c.op(key, v, MDB_SET)) return out;
    bool more = c.op(key, v, MDB_GET_MULTIPLE);
    while (more) {
        size_t n = v.mv_size / 8;
        size_t at = out.size();
        out.resize(at + n);
        std::memcpy(out.data() + at, v.mv_data, n * 8);
        more = c.op(key, v, MDB_NEXT_MULTIPLE);
    }
    return out;
}

}  // namespace agentsensus
