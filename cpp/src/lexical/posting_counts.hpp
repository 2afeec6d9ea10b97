// Each posting key's count of postings (a word's records in one scope), as
// the lexical reads ask for them: weighing a statement, searching for it
// and checking a hit's coverage each count words, one LMDB descent apiece,
// and consecutive deposits ask about mostly the same words.
//
// Invariant: a count is served for snapshot S (a read transaction's LMDB
// txn id) only if it was read at S, or read at an earlier snapshot that
// only this handle's own commits separate from S, each of which either did
// not touch that key or noted exactly how many of its postings it added
// less removed (the count served is the one read, moved by those). A
// commit's notes are kept while its write transaction runs and handed over
// when it commits (committed); a key that an earlier attempt of the same
// transaction id moved (one that never committed) is dropped, not moved; a
// rebuild drops every key; any other commit in between (another process's,
// or one this handle did not see) empties the counts. A write
// transaction's view is uncommitted, so only read transactions may consult
// them. Thread-safe.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "lexical/word_table.hpp"

namespace agentsensus {

class PostingCounts {
public:
    // key's count at snapshot `at`, when known.
    std::optional<size_t> find(uint64_t at, const std::string& key);
    // Remembers key's count, read at snapshot `at`.
    void remember(uint64_t at, const std::string& key, size_t count);

    // A write transaction of id txn begins. Notes of an earlier attempt of
    // that id never committed: they are kept as drops only (an attempt that
    // is retried notes its changes again).
    void began(uint64_t txn);
    // Write transaction txn added (delta > 0) or removed (delta < 0) exactly
    // that many of key's postings (0: it found nothing to change).
    void moved(uint64_t txn, const std::string& key, long delta);
    // Write transaction txn changes every key's postings (a rebuild): the
    // counts drop them all.
    void changing_all(uint64_t txn);
    // This handle committed write transaction txn.
    void committed(uint64_t txn);

private:
    struct Change {
        std::unordered_map<std::string, long> moved;  // key -> postings added less removed
        std::vector<std::string> keys;                // dropped, whatever moved says
        bool all = false;
        size_t noted() const { return moved.size() + keys.size(); }
    };
    // With mu_ held: pending_ as the notes of write transaction txn.
    Change& pending(uint64_t txn);
    // Bounds: counts kept, a transaction's keys listed (beyond: all), and
    // commits awaiting a reader.
    static constexpr size_t kMaxCounts = size_t{1} << 18, kMaxKeys = size_t{1} << 16, kMaxCommits = 64;

    // With mu_ held: carries the counts to snapshot `at`; false when they
    // cannot serve it (an older snapshot than theirs).
    bool advance(uint64_t at);

    std::mutex mu_;
    uint64_t at_ = 0;         // the snapshot counts_ hold for; 0: none yet
    WordMap<size_t> counts_;  // by counted key (a flat map: a deposit's lexical call looks up dozens)
    uint64_t writing_ = 0;    // the write transaction pending_ belongs to
    Change pending_;
    std::map<uint64_t, Change> committed_;  // this handle's commits after at_
};

}  // namespace agentsensus
