// Compaction: rewrites a store's data.mdb with only its live pages, so that
// bytes of deleted records left in LMDB's free pages leave the file.
#pragma once
#include <cstdint>
#include <string>

namespace agentsensus {

struct CompactResult {
    uint64_t before = 0;  // data.mdb bytes
    uint64_t after = 0;
};

// Copies dir/data.mdb, compacted (live pages only), into a temporary directory beside
// it, fsyncs the copy, and renames it over data.mdb (atomic: a crash leaves
// either file whole). Needs exclusive use: throws Error when another process
// has the store open, and holds LMDB's open lock so that none can open it
// meanwhile (they wait). The caller must not have the store open either.
// The records, the journal and the store identity are unchanged, so the
// saved index file stays valid.
CompactResult compact_store(const std::string& dir);

}  // namespace agentsensus
