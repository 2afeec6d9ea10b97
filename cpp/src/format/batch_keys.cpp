#include "format/batch_keys.hpp"

#include <utility>

#include "agentsensus/errors.hpp"
#include "format/bytes.hpp"
#include "format/schema.hpp"
#include "lmdb/lmdb_env.hpp"
#include "store/store_impl.hpp"  // DepositPlan

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

}  // namespace agentsensus
