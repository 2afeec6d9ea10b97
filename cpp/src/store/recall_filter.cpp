#include "store/recall_filter.hpp"

#include <algorithm>
#include <cstring>

#include "agentsensus/errors.hpp"
#include "format/bytes.hpp"

namespace agentsensus {

RecallFilter RecallFilter::decode(std::string_view spec) {
    RecallFilter f;
    if (spec.empty()) return f;
    Reader r(spec.data(), spec.size());
    auto bad = [] { return InvalidArgument("the recall filter spec is malformed"); };
    uint32_t n = 0;
    if (!r.get(n) || n > 1024) throw bad();
    for (uint32_t i = 0; i < n; ++i) {
        Clause c;
        uint8_t field = 0, op = 0;
        uint32_t key_len = 0, nvalues = 0;
        std::string_view key;
        if (!r.get(field) || !r.get(op) || !r.get(key_len) || !r.get_bytes(key_len, key) || !r.get(nvalues))
            throw bad();
        if (field > kAsOf || op > kLt || nvalues == 0 || nvalues > 4096 || (op != kIn && nvalues != 1)) throw bad();
        c.field = static_cast<Field>(field);
        c.op = static_cast<Op>(op);
        c.key.assign(key);
        for (uint32_t j = 0; j < nvalues; ++j) {
            JsonValue v;
            uint8_t kind = 0;
            if (!r.get(kind)) throw bad();
            switch (kind) {
                case JsonValue::kNull: v.kind = JsonValue::kNull; break;
                case JsonValue::kBool: {
                    uint8_t b = 0;
                    if (!r.get(b)) throw bad();
                    v.kind = JsonValue::kBool;
                    v.b = b != 0;
                    break;
                }
                case JsonValue::kNumber:
                    if (!r.get(v.num)) throw bad();
                    v.kind = JsonValue::kNumber;
                    break;
                case JsonValue::kString: {
                    uint32_t len = 0;
                    std::string_view s;
                    if (!r.get(len) || !r.get_bytes(len, s)) throw bad();
                    v.kind = JsonValue::kString;
                    v.str.assign(s);
                    break;
                }
                default: throw bad();
            }
            c.values.push_back(std::move(v));
        }
        if (c.field == kAsOf) {
            const JsonValue& r0 = c.values[0];
            if (f.has_as_of_ || c.op != kEq || r0.kind != JsonValue::kNumber || !(r0.num >= 0) ||
                r0.num > 4294967295.0 || r0.num != static_cast<double>(static_cast<uint32_t>(r0.num)))
                throw bad();
            f.has_as_of_ = true;
            f.as_of_ = static_cast<uint32_t>(r0.num);
            continue;
        }
        f.needs_round_ |= c.field == kRound;
        f.needs_times_ |= c.field == kCreated || c.field == kUpdated;
        f.needs_metadata_ |= c.field == kMetadata;
        f.clauses_.push_back(std::move(c));
    }
    if (!r.rest().empty()) throw bad();
    f.spec_.assign(spec);
    return f;
}

RecallFilter RecallFilter::with_versions() const {
    RecallFilter f = *this;
    if (!f.versions_) {
        f.versions_ = true;
        f.spec_.append("\xffversions");  // cannot end a decoded spec: no decoded filter equals it
    }
    return f;
}

// Equality is by kind and value (1 and 1.0 are equal, true and 1 are not);
// order ($gte, $lte, $gt, $lt) compares numbers with numbers and strings
// with strings (byte order, so ISO dates order), anything else fails.
bool RecallFilter::holds(const Clause& c, const JsonValue& v) {
    auto eq = [&](const JsonValue& w) {
        if (v.kind != w.kind) return false;
        switch (v.kind) {
            case JsonValue::kNull: return true;
            case JsonValue::kBool: return v.b == w.b;
            case JsonValue::kNumber: return v.num == w.num;
            case JsonValue::kString: return v.str == w.str;
            default: return false;
        }
    };
    if (c.op == kEq || c.op == kIn) {
        for (const JsonValue& w : c.values)
            if (eq(w)) return true;
        return false;
    }
    const JsonValue& w = c.values.front();
    int cmp;
    if (v.kind == JsonValue::kNumber && w.kind == JsonValue::kNumber)
        cmp = v.num < w.num ? -1 : v.num > w.num ? 1 : 0;
    else if (v.kind == JsonValue::kString && w.kind == JsonValue::kString)
        cmp = v.str.compare(w.str) < 0 ? -1 : v.str == w.str ? 0 : 1;
    else
        return false;
    switch (c.op) {
        case kGte: return cmp >= 0;
        case kLte: return cmp <= 0;
        case kGt: return cmp > 0;
        case kLt: return cmp < 0;
        default: return false;
    }
}

bool RecallFilter::matches_fields(const Inputs& in) const {
    for (const Clause& c : clauses_) {
        JsonValue v;
        switch (c.field) {
            case kRound:
                v.kind = JsonValue::kNumber;
                v.num = in.round;
                break;
            case kCreated:
            case kUpdated:
                if (!in.has_times) return false;
                v.kind = JsonValue::kNumber;
                v.num = static_cast<double>(c.field == kCreated ? in.times.created : in.times.updated);
                break;
            case kMetadata: continue;
            case kAsOf: continue;  // never a clause: decode keeps it apart (as_of())
        }
        if (!holds(c, v)) return false;
    }
    return true;
}

bool RecallFilter::matches_metadata(const Inputs& in) const {
    for (const Clause& c : clauses_) {
        if (c.field != kMetadata) continue;
        JsonValue v;
        if (!in.has_metadata || !metadata_field(in.metadata, c.key, v) || !holds(c, v)) return false;
    }
    return true;
}

bool MetadataVerdicts::matches(const RecallFilter::Inputs& in) {
    if (!f_.needs_metadata()) return true;
    if (!in.has_metadata) return false;
    auto it = seen_.find(in.metadata);
    if (it != seen_.end()) return it->second;
    bool ok = f_.matches_metadata(in);
    if (seen_.size() < kMaxEntries && in.metadata.size() <= kMaxBytes) seen_.emplace(in.metadata, ok);
    return ok;
}

}  // namespace agentsensus
