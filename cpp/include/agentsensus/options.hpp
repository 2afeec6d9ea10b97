// How a store is opened: its vectors' size and metric, the index's
// parameters, and the open's mode.
#pragma once
#include <cstddef>
#include <cstdint>

namespace agentsensus {

enum class Metric : uint32_t { cos = 0, ip = 1, l2sq = 2 };

struct IndexParams {
    size_t connectivity = 16;
    size_t expansion_add = 128;
    size_t expansion_search = 64;
};

struct StoreOptions {
    uint32_t dim = 0;  // 0: take it from the store (required to create)
    Metric metric = Metric::cos;
    bool metric_given = false;  // check metric against an existing store
    bool create = true;
    bool readonly = false;
    bool sync = true;
    size_t map_size = size_t(256) << 20;  // initial LMDB map; it grows on demand
    size_t exact_cutoff = 4096;           // owners with at most this many records are scanned exactly
    IndexParams index;
};

}  // namespace agentsensus
