// Store's part of recall's filter (recall_filter.hpp holds the filter): a
// record's pass, the passing ids remembered per snapshot, and the cursor
// walk that keeps the ids that pass.
#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "agentsensus/errors.hpp"
#include "format/bytes.hpp"
#include "store/recall_filter.hpp"
#include "store/store_impl.hpp"

namespace agentsensus {

// The filter's inputs for one record, read in the caller's snapshot: only
// what the filter asks for.
bool StoreImpl::passes(MDB_txn* txn, uint32_t oid, uint64_t id, const RecallFilter& f) {
    if (f.empty()) return true;
    if (f.checks_versions() && !current_for(txn, oid, id, f)) return false;
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

std::shared_ptr<const std::vector<uint64_t>> StoreImpl::passing_ids(MDB_txn* txn, uint32_t oid, const RecallFilter& f) {
    if (f.empty()) return nullptr;
    size_t snapshot = mdb_txn_id(txn);
    std::lock_guard<std::mutex> g(passing_mu_);
    for (const PassingIds& p : passing_)
        if (p.snapshot == snapshot && p.oid == oid && p.spec == f.spec()) return p.ids;
    return nullptr;
}

void StoreImpl::remember_passing(MDB_txn* txn, uint32_t oid, const RecallFilter& f,
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
void StoreImpl::keep_passing(MDB_txn* txn, uint32_t oid, std::vector<uint64_t>& ids, const RecallFilter& f) {
    if (f.empty()) return;
    const bool meta = has_record_meta_;
    Cursor rc(txn, db_.records), tc(txn, meta ? db_.times : db_.records), mc(txn, meta ? db_.metadata : db_.records);
    MDB_val rk{}, rv{}, tk{}, tv{}, mk{}, mv{};
    bool rpos = false, tpos = false, mpos = false;
    MetadataVerdicts verdicts(f);
    size_t out = 0;
    for (uint64_t id : ids) {
        if (f.checks_versions() && !current_for(txn, oid, id, f)) continue;
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
