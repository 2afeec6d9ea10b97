#include "batch_keys.hpp"

#include <utility>

#include "bytes.hpp"
#include "errors.hpp"
#include "lmdb_env.hpp"
#include "schema.hpp"
#include "store.hpp"

namespace agentsensus {

void check_batch_key(const BatchKey& b) {
    if (b.key.empty() || b.key.size() > kMaxBatchKeyBytes)
        throw InvalidArgument("batch_key must be 1 to " + std::to_string(kMaxBatchKeyBytes) + " bytes");
    if (b.digest.size() != kBatchDigestBytes)
        throw InvalidArgument("a batch digest is " + std::to_string(kBatchDigestBytes) + " bytes");
}

std::string encode_batch_result(const BatchResult& r) {
    std::string e;
    e.append(r.digest);
    append<uint32_t>(e, static_cast<uint32_t>(r.ids.size()));
    for (size_t d = 0; d < r.ids.size(); ++d) {
        append<uint32_t>(e, static_cast<uint32_t>(r.ids[d].size()));
        for (size_t i = 0; i < r.ids[d].size(); ++i) {
            append<uint64_t>(e, r.ids[d][i]);
            append<uint8_t>(e, r.merged[d][i] ? 1 : 0);
        }
    }
    return e;
}

bool decode_batch_result(const MDB_val& v, BatchResult& r) {
    Reader rd(v.mv_data, v.mv_size);
    std::string_view digest;
    uint32_t deposits = 0;
    if (!rd.get_bytes(kBatchDigestBytes, digest) || !rd.get(deposits)) return false;
    r = BatchResult{};
    r.digest = std::string(digest);
    for (uint32_t d = 0; d < deposits; ++d) {
        uint32_t n = 0;
        if (!rd.get(n) || !rd.has(size_t(n) * 9)) return false;
        std::vector<uint64_t> ids(n);
        std::vector<uint8_t> merged(n);
        for (uint32_t i = 0; i < n; ++i) {
            rd.get(ids[i]);
            rd.get(merged[i]);
            if (merged[i] > 1) return false;
        }
        r.ids.push_back(std::move(ids));
        r.merged.push_back(std::move(merged));
    }
    return rd.rest().empty();
}

BatchResult batch_result_of(const BatchKey& b, const std::vector<DepositPlan>& plans,
                            const std::vector<std::vector<uint64_t>>& ids) {
    BatchResult r;
    r.digest = b.digest;
    r.ids = ids;
    for (const DepositPlan& p : plans) {
        std::vector<uint8_t> m;
        for (const StatementPlan& s : p.statements) m.push_back(s.target != 0 ? 1 : 0);
        r.merged.push_back(std::move(m));
    }
    return r;
}

bool batch_recorded(MDB_txn* txn, MDB_dbi dbi, std::string_view key) {
    MDB_val v;
    return get(txn, dbi, val(key), v);
}

void record_batch(MDB_txn* txn, MDB_dbi dbi, std::string_view key, const BatchResult& r) {
    std::string e = encode_batch_result(r);
    put(txn, dbi, val(key), val(e));
}

namespace {

// Why a row breaks I13, or empty when it is sound.
std::string row_fault(const MDB_val& k, const MDB_val& v, uint64_t next_id) {
    if (k.mv_size == 0 || k.mv_size > kMaxBatchKeyBytes) return "a batch key has the wrong size";
    BatchResult r;
    if (!decode_batch_result(v, r)) return "the result of batch key '" + std::string(view(k)) + "' is damaged";
    for (const auto& ids : r.ids)
        for (uint64_t id : ids)
            if (id == 0 || id >= next_id)
                return "batch key '" + std::string(view(k)) + "' names record " + std::to_string(id) +
                       ", beyond the id counter";
    return {};
}

}  // namespace

void verify_batch_keys(MDB_txn* txn, MDB_dbi dbi, uint64_t next_id, const std::function<void(std::string)>& bad) {
    Cursor c(txn, dbi);
    MDB_val k, v;
    for (bool more = c.op(k, v, MDB_FIRST); more; more = c.op(k, v, MDB_NEXT)) {
        std::string why = row_fault(k, v, next_id);
        if (!why.empty()) bad(std::move(why));
    }
}

void repair_batch_keys(MDB_txn* txn, MDB_dbi dbi, uint64_t next_id) {
    std::vector<std::string> drop;
    {
        Cursor c(txn, dbi);
        MDB_val k, v;
        for (bool more = c.op(k, v, MDB_FIRST); more; more = c.op(k, v, MDB_NEXT))
            if (!row_fault(k, v, next_id).empty()) drop.emplace_back(view(k));
    }
    for (const std::string& k : drop) del(txn, dbi, val(k));
}

// ---------------------------------------------------------------- Store's side

std::optional<BatchResult> Store::batch_result(const std::string& key) {
    check_open();
    if (key.empty() || key.size() > kMaxBatchKeyBytes)
        throw InvalidArgument("batch_key must be 1 to " + std::to_string(kMaxBatchKeyBytes) + " bytes");
    if (!has_batch_keys_) return std::nullopt;
    ReadTxn t(*env_);
    MDB_val v;
    if (!agentsensus::get(t.get(), db_.batch_keys, val(key), v)) return std::nullopt;
    BatchResult r;
    if (!decode_batch_result(v, r)) throw Corrupt("the result of batch key '" + key + "' is damaged");
    return r;
}

std::vector<std::pair<std::string, BatchResult>> Store::batch_keys(const std::string& after, size_t limit) {
    check_open();
    std::vector<std::pair<std::string, BatchResult>> out;
    if (!has_batch_keys_) return out;
    ReadTxn t(*env_);
    Cursor c(t.get(), db_.batch_keys);
    MDB_val k = val(after), v;
    bool more = after.empty() ? c.op(k, v, MDB_FIRST) : c.op(k, v, MDB_SET_RANGE);
    if (more && !after.empty() && view(k) == after) more = c.op(k, v, MDB_NEXT);
    for (; more && out.size() < limit; more = c.op(k, v, MDB_NEXT)) {
        BatchResult r;
        if (!decode_batch_result(v, r))
            throw Corrupt("the result of batch key '" + std::string(view(k)) + "' is damaged");
        out.emplace_back(std::string(view(k)), std::move(r));
    }
    return out;
}

void Store::load_batch_keys(const std::vector<std::pair<std::string, BatchResult>>& rows) {
    check_open();
    for (const auto& [key, r] : rows) {
        check_batch_key(BatchKey{key, r.digest});
        if (r.merged.size() != r.ids.size()) throw InvalidArgument("a batch result's ids and merged disagree");
        for (size_t d = 0; d < r.ids.size(); ++d)
            if (r.merged[d].size() != r.ids[d].size())
                throw InvalidArgument("a batch result's ids and merged disagree");
    }
    env_->write([&](MDB_txn* txn) {
        const uint64_t next_id = meta_u64(txn, kMetaNextId, 1);
        for (const auto& [key, r] : rows) {
            for (const auto& ids : r.ids)
                for (uint64_t id : ids)
                    if (id == 0 || id >= next_id)
                        throw InvalidArgument("batch key '" + key + "' names record " + std::to_string(id) +
                                              ", beyond the id counter");
            if (!agentsensus::put(txn, db_.batch_keys, val(key), val(encode_batch_result(r)), MDB_NOOVERWRITE))
                throw InvalidArgument("batch key '" + key + "' is already recorded");
        }
    });
}

}  // namespace agentsensus
