// Exactly-once batches: deposit_many(batch_key=...) records its key and its
// result in the batch's own write transaction (kBatchKeysTable), so a batch
// retried after a crash, a restart or a lost reply finds its key and gets the
// first result back instead of depositing again. Both happen or neither.
#pragma once
#include <lmdb.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "agentsensus/limits.hpp"
#include "agentsensus/rows.hpp"

namespace agentsensus {

struct DepositPlan;

// Throws InvalidArgument for a key or digest of the wrong size.
void check_batch_key(const BatchKey& b);

// [digest 16][u32 deposits] then per deposit [u32 n] and n x [u64 id][u8 merged]
// (native, unaligned).
std::string encode_batch_result(const BatchResult& r);
// False when the value is short, long or inconsistent (a damaged row).
bool decode_batch_result(const MDB_val& v, BatchResult& r);

// The result a commit of plans with these ids records under its key.
BatchResult batch_result_of(const BatchKey& b, const std::vector<DepositPlan>& plans,
                            const std::vector<std::vector<uint64_t>>& ids);

// Inside a write transaction: whether key is recorded, and recording it.
bool batch_recorded(MDB_txn* txn, MDB_dbi dbi, std::string_view key);
void record_batch(MDB_txn* txn, MDB_dbi dbi, std::string_view key, const BatchResult& r);

// I13 (verify): every row has a key of 1..kMaxBatchKeyBytes bytes, decodes,
// and names only record ids in [1, next_id) (ids given out; the records may
// have been forgotten since).
void verify_batch_keys(MDB_txn* txn, MDB_dbi dbi, uint64_t next_id, const std::function<void(std::string)>& bad);
// Repair: keeps the rows I13 accepts, drops the others.
void repair_batch_keys(MDB_txn* txn, MDB_dbi dbi, uint64_t next_id);

}  // namespace agentsensus
