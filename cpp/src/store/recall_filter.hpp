// The filter's evaluation inside a scan: the verdicts on metadata texts
// already seen (the filter itself: agentsensus/recall_filter.hpp).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "agentsensus/recall_filter.hpp"
#include "format/record_meta.hpp"

namespace agentsensus {

// The metadata clauses' verdict, remembered by the metadata's bytes for one
// scan: records often share their metadata (a user, an agent, a category),
// and parsing it is most of a filter's cost (measured: about 0.3 us an
// object, against 0.06 us to read a row). The remembered bytes are views
// into the caller's read transaction, which must outlive this.
class MetadataVerdicts {
public:
    explicit MetadataVerdicts(const RecallFilter& f) : f_(f) {}
    bool matches(const RecallFilter::Inputs& in);

private:
    // Bounds the memory a scan of all-distinct metadata spends on this.
    static constexpr size_t kMaxEntries = 4096, kMaxBytes = 1024;
    const RecallFilter& f_;
    std::unordered_map<std::string_view, bool> seen_;
};

}  // namespace agentsensus
