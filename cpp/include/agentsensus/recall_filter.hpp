// recall's `where`: a conjunction of clauses on the querying owner's
// metadata, the record's round and its times, evaluated inside the candidate
// scan (the exact owner scan and the graph search's keep-test), so the k
// best that pass are the k best of the records that pass.
//
// The Python layer parses `where` into this compact spec (native-endian):
// [u32 clauses], each [u8 field][u8 op][u32 key bytes][key][u32 values] then
// each value [u8 kind] + (bool: u8 | number: f64 | string: u32 bytes, bytes |
// null: nothing). Field 0 is a metadata key; 1 round, 2 created_at, 3
// updated_at (times in microseconds since the epoch). Field 4 (op eq, one
// number) is not a clause but recall's as_of round: what the owner held at
// that round (store_versions.cpp).
//
// Besides its clauses, a filter may check versions: a record superseded for
// the reading owner fails (the store sets this on every recall of a store
// with supersessions, with_versions).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "agentsensus/rows.hpp"

namespace agentsensus {

// A JSON scalar as a filter compares it. Numbers are doubles; a nested array
// or object reads as kOther (never equal to anything a filter names).
struct JsonValue {
    enum Kind : uint8_t { kNull = 0, kBool = 1, kNumber = 2, kString = 3, kOther = 4 } kind = kNull;
    bool b = false;
    double num = 0;
    std::string str;
};

class RecallFilter {
public:
    enum Field : uint8_t { kMetadata = 0, kRound = 1, kCreated = 2, kUpdated = 3, kAsOf = 4 };
    enum Op : uint8_t { kEq = 0, kIn = 1, kGte = 2, kLte = 3, kGt = 4, kLt = 5 };

    // What one record offers the filter (only what needs_* asks for is read).
    struct Inputs {
        uint32_t round = 0;
        bool has_times = false;
        RecordTimes times;
        bool has_metadata = false;
        std::string_view metadata;
    };

    RecallFilter() = default;
    // InvalidArgument on a malformed spec.
    static RecallFilter decode(std::string_view spec);

    // No clause, no as_of and no versions check: every record passes.
    bool empty() const { return clauses_.empty() && !has_as_of_ && !versions_; }
    // The spec it was decoded from (with a mark when it checks versions):
    // equal specs, equal filters.
    const std::string& spec() const { return spec_; }
    // as_of: recall what the owner held at this round (versions.hpp).
    bool has_as_of() const { return has_as_of_; }
    uint32_t as_of() const { return as_of_; }
    // Whether a record superseded for the owner fails; a copy that checks.
    bool checks_versions() const { return versions_ || has_as_of_; }
    RecallFilter with_versions() const;
    bool needs_round() const { return needs_round_; }
    bool needs_times() const { return needs_times_; }
    bool needs_metadata() const { return needs_metadata_; }
    // Every clause holds. A missing field (no metadata, no such key, no
    // times) fails every clause on it.
    bool matches(const Inputs& in) const { return matches_fields(in) && matches_metadata(in); }
    // The clauses on the round and the times alone.
    bool matches_fields(const Inputs& in) const;
    // The clauses on the metadata alone (true when there are none).
    bool matches_metadata(const Inputs& in) const;

private:
    struct Clause {
        Field field;
        Op op;
        std::string key;
        std::vector<JsonValue> values;
    };
    std::vector<Clause> clauses_;
    std::string spec_;
    bool needs_round_ = false, needs_times_ = false, needs_metadata_ = false;
    bool has_as_of_ = false, versions_ = false;
    uint32_t as_of_ = 0;

    static bool holds(const Clause& c, const JsonValue& v);
};

}  // namespace agentsensus
