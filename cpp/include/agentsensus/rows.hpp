// The rows the engine's API takes and gives.
#pragma once
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace agentsensus {

// times value: [u64 created][u64 updated] microseconds since the Unix epoch (UTC).
struct RecordTimes {
    uint64_t created = 0, updated = 0;
};

struct Hit {
    uint64_t id;
    float score;  // similarity: higher is closer
};

struct LexicalHit {
    int64_t id;   // a record id; negative: an overlay's new record
    float score;  // BM25; higher is closer, > 0
};

// A record's text as a batch of deposits will leave it, so that a later
// deposit of the batch ranks as it would after the earlier ones committed.
// id > 0: a committed record whose text the batch changes; id < 0: the
// (-id)-th record the batch creates (it ranks after every committed id).
// hit: it may be a hit (false: it only counts in the statistics, as a new
// record of another scope does, and is left out of a scope's statistics).
struct LexicalOverlay {
    int64_t id;
    std::string_view text;
    bool hit = true;
};

// One record an item's indexed text ended in, and the owner it is held for.
struct ItemRef {
    std::string owner;
    uint64_t record = 0;
};

struct ItemRow {
    std::string ns, key;  // ns: the namespace's labels joined by '.'
    std::string value;    // the item's JSON text (opaque here)
    int64_t created_us = 0, updated_us = 0;
    std::vector<ItemRef> refs;
};

// One put (or, with remove, delete) of an item. refs are given (import), and
// with deposit >= 0 they are also the ids that deposit of the commit ended
// in, held for its owner. created_us < 0: kept from the row it replaces, or
// updated_us for a new item.
struct ItemWrite {
    std::string ns, key;
    bool remove = false;
    std::string value;
    int64_t created_us = -1, updated_us = 0;
    std::vector<ItemRef> refs;
    int64_t deposit = -1;
};

struct BatchKey {
    std::string key;
    std::string digest;  // kBatchDigestBytes
};

// What a batch gave: per deposit, per statement, the record it ended in and
// whether it merged (a plan target other than 0).
struct BatchResult {
    std::string digest;
    std::vector<std::vector<uint64_t>> ids;
    std::vector<std::vector<uint8_t>> merged;
};

enum class Via : uint8_t { hit = 0, edge = 1, none = 2 };

// One record as the API shows it.
struct Row {
    uint64_t id = 0;
    std::string text;
    std::vector<std::string> owners;  // sorted
    uint32_t round = 0;
    float score = 0.f;
    Via via = Via::none;
    bool has_times = false;  // false: written before schema 3
    RecordTimes times;
    std::string metadata;  // the reading owner's (recall; get with an owner), or empty
    // Its chain of versions (0: none): the record it supersedes and the one
    // that superseded it, whose round (valid_until) closed this one's validity.
    uint64_t supersedes = 0, superseded_by = 0;
    uint32_t valid_until = 0;  // meaningful when superseded_by != 0
};

// A record's place in its chain of versions (0: none; valid_until, the
// round of the record that superseded it, is 0 then too).
struct VersionLinks {
    uint64_t supersedes = 0, superseded_by = 0;
    uint32_t valid_until = 0;
};

struct PrepareResult {
    uint64_t seq = 0;               // journal position of the snapshot
    std::vector<uint64_t> exact;    // per statement: record with the same normalized text, or 0
    std::vector<uint32_t> offsets;  // per statement: candidates[offsets[i], offsets[i+1])
    std::vector<Hit> candidates;    // similarity >= min_similarity, best first
    std::vector<Row> records;       // every distinct record named above
    // With near_k > 0 (Store::prepare), per statement: the records at or
    // above near_floor that are not candidates, best first, in
    // near[near_offsets[i], near_offsets[i+1]); near_complete[i] when they
    // are all of the scope's (the search ended below near_floor or ran out
    // of records before its depth).
    std::vector<uint32_t> near_offsets;
    std::vector<Hit> near;
    std::vector<uint8_t> near_complete;
};

// One deposit's plan as a caller builds it for Store::commit, owning its
// data (Store::commit checks it and views it as a DepositPlan). Per
// statement i: texts[i], its normalized-text digest (digests[16i, 16i+16)),
// its vector (vectors[dim*i, dim*i+dim), as given), its target (0: a new
// record; > 0: merge into that record; < 0: into the (-target)-th new
// record of this commit, 1-based), and for a merge the survivor's text the
// caller's policy saw (expected: a mismatch is a conflict) and its text
// after (kept). metadata: empty, or per statement a JSON object for
// (record, owner) or "" (leave it as it is). supersedes: empty, or per
// statement 0 or, for a new record (target 0), the record it supersedes
// (> 0 a committed one, < 0 a new record of this commit, as targets).
struct CommitPlan {
    std::string owner;
    uint32_t round = 0;
    std::string scope;  // "" the default scope; its records merge only with records of this scope
    std::vector<std::string> texts;
    std::string digests;
    std::vector<float> vectors;
    std::vector<int64_t> targets;
    std::vector<std::string> expected, kept;
    std::vector<std::string> metadata;
    std::vector<int64_t> supersedes;
};

struct CommitResult {
    bool conflict = false;
    std::string why;                         // set on conflict
    std::vector<std::vector<uint64_t>> ids;  // per deposit, per statement
    std::vector<ItemRef> unused;             // refs the commit's item writes let go of (ItemTable::write)
};

struct MergeRow {
    uint64_t seq;
    uint64_t survivor;
    std::string kept, discarded, owner;
    uint32_t round;
};

// One row of the said table: a statement as its owner deposited it into a
// record (n = 0: the one whose vector the record keeps; vector empty there).
struct SaidRow {
    uint64_t n = 0;
    std::string owner;
    uint32_t round = 0;
    std::string text;
    std::vector<float> vector;  // dim floats, or empty (row 0)
};

// What forget does when other owners remain, as the caller's merge policy
// chose it from the record's statements (the caller read with said()). The
// expected_* fields are what it saw: anything else is a conflict.
struct ForgetPlan {
    std::string expected_text;
    uint64_t expected_rows = 0, expected_last = 0;  // row count and the largest n
    std::string text;                               // the record's text afterwards
    uint64_t vector_from = 0;                       // row whose vector the record takes when row 0 goes
    std::vector<std::string> digests;               // the record's text digests afterwards
};

// One record with everything an exact copy of the store needs (export and
// import): the header fields, the vector as stored, and the normalized-text
// digests that point at it.
struct DumpRow {
    uint64_t id = 0;
    uint32_t round = 0;
    uint64_t deposit = 0;
    std::string text;
    std::vector<std::string> owners;   // sorted
    std::vector<uint64_t> edges;       // ascending
    std::vector<std::string> digests;  // kDigestBytes each, ascending
    std::vector<float> vector;         // dim floats
    std::vector<SaidRow> said;         // its statements, n ascending (none: written by schema 1)
    std::string scope;                 // "" the default scope
    uint64_t supersedes = 0;           // the record it supersedes (a lower id), or 0
};

// The store-wide counters a copy must continue from.
struct Counters {
    uint64_t next_id = 1, next_merge = 1, deposits = 0;
};

// One write transaction of an import into a store that holds no records.
// Rows and merges must come in ascending id/seq order, after everything
// loaded before; an edge to a lower id needs that record loaded (an edge to a
// higher id is added when that record's row lists it back).
struct LoadBatch {
    std::vector<std::string> owners;  // owner names to create first, in order
    std::vector<DumpRow> rows;
    std::vector<MergeRow> merges;
    const Counters* counters = nullptr;  // set the counters (last batch)
};

struct Stats {
    uint64_t records = 0, deposits = 0, merges = 0, shared = 0, linked = 0, max_owners = 0, owners = 0;
};

// One statement's lexical search (Store::lexical): its text, its vector (dim
// floats, as given) for the similarity of each hit, and the ids whose BM25
// score it also wants (its vector candidates).
struct LexicalQuery {
    std::string_view text;
    const float* vector = nullptr;
    std::vector<int64_t> also;
    std::vector<int64_t> exclude;  // never hits (the statement's vector candidates): the top k is of the others
    double floor = 0;  // > 0: the text weighed as lexical_floor weighs it (LexicalIndex::weigh), hits below least
    // > 0 (with a floor): a hit that reaches least is kept only if its mutual
    // coverage with the text (LexicalIndex::coverage) reaches this
    double mutual = 0;
    // A committed hit less similar than this to the vector is no candidate
    // unless it holds most of what the text says (LexicalAnswer::most_of);
    // it is dropped before its coverage is counted (the cheaper test first).
    double min_similarity = -std::numeric_limits<double>::infinity();
    // Set: the hits are among these records only (a deposit's near ones, all
    // that can reach min_similarity), each scored directly as the search
    // scores it, instead of searched for in the whole scope; with a gate,
    // the scope is searched too for the hits that hold most of the text.
    std::optional<std::vector<int64_t>> only;
};

// Per text: (word, its count in the text, the records of the scope holding
// it); docs and avgdl: the scope's record count and mean length in words.
struct LexicalWordCounts {
    double docs = 0, avgdl = 1;
    std::vector<std::vector<std::tuple<std::string, uint32_t, double>>> words;
};

struct LexicalAnswer {
    std::vector<uint32_t> offsets;         // per query: hits[offsets[i], offsets[i+1])
    std::vector<LexicalHit> hits;          // BM25 best first
    std::vector<float> similarity;         // per hit: to the query's vector (NaN for an overlay's new record)
    std::vector<std::vector<float>> also;  // per query: the scores of its also ids
    std::vector<Row> records;              // every committed record hit, once
    std::vector<double> least;             // per query: the least score a hit needs (0 without a floor)
    // per query: the score from which a hit holds most of what the query says (half its best possible
    // score, as a floor weighs it; infinity when it has none): such a hit passes a gate
    std::vector<double> most_of;
};

// A record's times and every owner's metadata, for export and import
// (Store::meta_dump, Store::load_meta).
struct MetaDump {
    uint64_t id = 0;
    bool has_times = false;
    RecordTimes times;
    std::vector<std::pair<std::string, std::string>> metadata;  // (owner name, JSON), owner id order
};

}  // namespace agentsensus
