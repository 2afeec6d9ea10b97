// Documented input limits. Enforced by the engine; the Python layer reads
// them from the compiled module to give earlier, friendlier errors.
#pragma once
#include <cstddef>

namespace agentsensus {

constexpr size_t kMaxStatementBytes = 64 * 1024;   // UTF-8 bytes per statement
constexpr size_t kMaxStatementsPerDeposit = 1024;  // statements in one deposit
constexpr size_t kMaxOwnerBytes = 255;             // UTF-8 bytes of an owner name
// Owners of one record: get and recall return the whole owner set, so this
// bounds one row's size (at most about 1 MiB of names).
constexpr size_t kMaxOwnersPerRecord = 4096;
constexpr size_t kMaxDim = 16384;    // vector dimensions
constexpr size_t kDigestBytes = 16;  // normalized-text digest

// A batch key is 1..kMaxBatchKeyBytes bytes (an LMDB key holds at most 511).
constexpr size_t kMaxBatchKeyBytes = 256;
// The caller's digest of what the batch deposits: a retry under the same key
// must carry the same digest, or it is refused as a different batch.
constexpr size_t kBatchDigestBytes = 16;

// Metadata is a JSON object of at most this many bytes, per (record, owner).
constexpr size_t kMaxMetadataBytes = 16 * 1024;

}  // namespace agentsensus
