// Store's part of batch keys (format/batch_keys.hpp holds their codec): a
// recorded result, the export's listing and the import's load.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agentsensus/errors.hpp"
#include "format/batch_keys.hpp"
#include "format/bytes.hpp"
#include "format/schema.hpp"
#include "lmdb/lmdb_env.hpp"
#include "store/store_impl.hpp"

namespace agentsensus {

// ---------------------------------------------------------------- Store's side

std::optional<BatchResult> StoreImpl::batch_result(const std::string& key) {
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

std::vector<std::pair<std::string, BatchResult>> StoreImpl::batch_keys(const std::string& after, size_t limit) {
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

void StoreImpl::load_batch_keys(const std::vector<std::pair<std::string, BatchResult>>& rows) {
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
