#include "recall_filter.hpp"

#include <algorithm>
#include <cstring>

#include "bytes.hpp"
#include "errors.hpp"
#include "store.hpp"

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
        if (field > kUpdated || op > kLt || nvalues == 0 || nvalues > 4096 || (op != kIn && nvalues != 1)) throw bad();
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
        f.needs_round_ |= c.field == kRound;
        f.needs_times_ |= c.field == kCreated || c.field == kUpdated;
        f.needs_metadata_ |= c.field == kMetadata;
        f.clauses_.push_back(std::move(c));
    }
    if (!r.rest().empty()) throw bad();
    f.spec_.assign(spec);
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

// The filter's inputs for one record, read in the caller's snapshot: only
// what the filter asks for.
bool Store::passes(MDB_txn* txn, uint32_t oid, uint64_t id, const RecallFilter& f) {
    if (f.empty()) return true;
    RecallFilter::Inputs in;
    Be64 k(id);
    MDB_val v;
    if (f.needs_round()) {
        RecordHeader h;
        std::string_view text;
        if (!agentsensus::get(txn, db_.records, val(k.b, 8), v) || !decode_record(v, h, text)) return false;
        in.round = h.round;
    }
    // A read-only open of a schema-1 or 2 store has neither table: no times, no metadata.
    if (f.needs_times() && has_record_meta_ && agentsensus::get(txn, db_.times, val(k.b, 8), v))
        in.has_times = decode_times(v.mv_data, v.mv_size, in.times);
    if (f.needs_metadata() && has_record_meta_) {
        auto mk = metadata_key(id, oid);
        if (agentsensus::get(txn, db_.metadata, val(mk.data(), mk.size()), v)) {
            in.has_metadata = true;
            in.metadata = view(v);
        }
    }
    return f.matches(in);
}

namespace {
constexpr size_t kPassingKept = 8;  // filters remembered (a few users' or agents' at a time)
}  // namespace

std::shared_ptr<const std::vector<uint64_t>> Store::passing_ids(MDB_txn* txn, uint32_t oid, const RecallFilter& f) {
    if (f.empty()) return nullptr;
    size_t snapshot = mdb_txn_id(txn);
    std::lock_guard<std::mutex> g(passing_mu_);
    for (const PassingIds& p : passing_)
        if (p.snapshot == snapshot && p.oid == oid && p.spec == f.spec()) return p.ids;
    return nullptr;
}

void Store::remember_passing(MDB_txn* txn, uint32_t oid, const RecallFilter& f,
                             std::shared_ptr<const std::vector<uint64_t>> kept) {
    if (f.empty()) return;
    size_t snapshot = mdb_txn_id(txn);
    std::lock_guard<std::mutex> g(passing_mu_);
    // What older snapshots found is of no use to a reader of a newer one.
    passing_.erase(std::remove_if(passing_.begin(), passing_.end(),
                                  [&](const PassingIds& p) {
                                      return p.snapshot < snapshot || (p.oid == oid && p.spec == f.spec());
                                  }),
                   passing_.end());
    if (passing_.size() >= kPassingKept) passing_.erase(passing_.begin());
    passing_.push_back(PassingIds{snapshot, oid, f.spec(), std::move(kept)});
}

}  // namespace agentsensus

namespace agentsensus {

namespace {

// Moves c to the first key >= target (LMDB's memcmp order), trying a few
// steps forward first: a scan's ids ascend, so the next row it needs is
// usually the next key or close to it (one seek per id costs a tree descent).
bool seek(Cursor& c, MDB_val& k, MDB_val& v, bool& positioned, const unsigned char* target, size_t n) {
    for (int step = 0; positioned && step < 4; ++step) {
        int cmp = std::memcmp(k.mv_data, target, std::min(k.mv_size, n));
        if (cmp > 0 || (cmp == 0 && k.mv_size >= n)) return true;
        positioned = c.op(k, v, MDB_NEXT);
    }
    k = val(target, n);
    positioned = c.op(k, v, MDB_SET_RANGE);
    return positioned;
}

bool at(const MDB_val& k, const unsigned char* key, size_t n) {
    return k.mv_size == n && std::memcmp(k.mv_data, key, n) == 0;
}

}  // namespace

// passes() for every id of an ascending list, with one cursor per table the
// filter reads walking forward (the exact owner scan's filter).
void Store::keep_passing(MDB_txn* txn, uint32_t oid, std::vector<uint64_t>& ids, const RecallFilter& f) {
    if (f.empty()) return;
    const bool meta = has_record_meta_;
    Cursor rc(txn, db_.records), tc(txn, meta ? db_.times : db_.records), mc(txn, meta ? db_.metadata : db_.records);
    MDB_val rk{}, rv{}, tk{}, tv{}, mk{}, mv{};
    bool rpos = false, tpos = false, mpos = false;
    MetadataVerdicts verdicts(f);
    size_t out = 0;
    for (uint64_t id : ids) {
        RecallFilter::Inputs in;
        Be64 k(id);
        if (f.needs_round()) {
            RecordHeader h;
            std::string_view text;
            if (!seek(rc, rk, rv, rpos, k.b, 8) || !at(rk, k.b, 8) || !decode_record(rv, h, text)) continue;
            in.round = h.round;
        }
        if (f.needs_times() && meta && seek(tc, tk, tv, tpos, k.b, 8) && at(tk, k.b, 8))
            in.has_times = decode_times(tv.mv_data, tv.mv_size, in.times);
        if (f.needs_metadata() && meta) {
            auto key = metadata_key(id, oid);
            if (seek(mc, mk, mv, mpos, key.data(), key.size()) && at(mk, key.data(), key.size())) {
                in.has_metadata = true;
                in.metadata = view(mv);
            }
        }
        if (f.matches_fields(in) && verdicts.matches(in)) ids[out++] = id;
    }
    ids.resize(out);
}

}  // namespace agentsensus
