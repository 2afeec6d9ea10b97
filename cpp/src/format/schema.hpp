// The map of a store's file format, in one place: every LMDB table of the
// store and of the lineage (key, value, encoding, invariant), every meta key,
// the codecs of the record, journal and merge-log values, and the header of
// the index file. docs/file-format.md is written from this file: change them
// together. Changing anything here changes the file format: bump
// kSchemaVersion.
//
// Conventions. Integer keys are big-endian (Be32/Be64 in bytes.hpp), so that
// LMDB's memcmp order is numeric order; integer values are native-endian (an
// LMDB file is not portable across byte orders anyway). A "dup" table holds
// several sorted values under one key (MDB_DUPSORT). Record ids, merge seqs
// and journal seqs start at 1; 0 means none. Texts and names are UTF-8.
// The invariants I1..I21 are the ones Store::verify checks (integrity.cpp);
// I1 is the structure of the LMDB pages themselves (page_check.hpp).
#pragma once
#include <lmdb.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "format/bytes.hpp"

namespace agentsensus {

// 2 added the said table (forget needs whose words are whose). A store of
// schema 1 is still read, and a writable open upgrades its meta schema; its
// records have no said rows (see kSaidTable).
// 3 added batch_keys (exactly-once deposit_many). A writable open of a store
// of schema 1 or 2 creates it empty; a read-only one reads as no keys.
// 3 also added the scope tables (kScopesTable): every record of a store of
// schema 1 or 2 is in the default scope.
// 4 added versions (kVersionsTable: a record superseded by another). A
// writable open of an older store creates it empty; a read-only one reads
// as no supersessions.
constexpr uint32_t kSchemaVersion = 4;
constexpr uint32_t kOldestSchemaVersion = 1;

// A named LMDB table and the flags it is opened with.
struct TableSpec {
    const char* name;
    unsigned flags;
};

// Duplicates of one fixed-size native integer per key, compared as integers.
constexpr unsigned kDupFixedInt = MDB_DUPSORT | MDB_DUPFIXED | MDB_INTEGERDUP;
// Duplicates of one fixed-size byte string per key, compared as bytes.
constexpr unsigned kDupFixed = MDB_DUPSORT | MDB_DUPFIXED;

// ------------------------------------------------------------ store tables
//
// Primary tables (repair keeps them): records, vectors, owners, owner names,
// edges, merges, said, batch_keys, times, metadata, scopes, scope_names,
// versions, lg_items, settings. Derived tables (repair rebuilds them from the primary
// ones): owned, owners-by-name, rmerges, norms, rnorms, journal, hist,
// scoped, scopes_by_name, lg_item_refs, lex_postings.
//
// The owner tables keep their first names, "agents" and "agent_names", from
// before the API said "owner": a table's name is part of the file, and
// renaming it would make every existing store unreadable.

// ASCII meta key (kMeta* below) -> its value, of the size given there.
constexpr TableSpec kMetaTable{"meta", 0};
// Be64 record id -> RecordHeader + the record's kept text (encode_record).
// I3: every record decodes, has a non-empty text, an id in [1, next_id), a
// finite vector and at least one owner.
constexpr TableSpec kRecordsTable{"records", 0};
// Be64 record id -> dim native f32: the record's first vector, unit length
// under metric cos (a merge keeps it). I4: every vector belongs to a record.
constexpr TableSpec kVectorsTable{"vectors", 0};
// Be64 record id -> dup u32 owner id: the record's owner set.
// I5 (with owned): owner sets and owner lists mirror each other, and name
// known owners.
constexpr TableSpec kOwnersTable{"owners", kDupFixedInt};
// Be32 owner id -> dup u64 record id: the records an owner owns, the reverse
// of owners (recall's owner scans).
constexpr TableSpec kOwnedTable{"owned", kDupFixedInt};
// Owner name -> u32 owner id. I2 (with agent_names): names and ids are a
// bijection, every id below next_agent.
constexpr TableSpec kOwnersByNameTable{"agents", 0};
// Be32 owner id -> owner name. Owner ids are given in first-seen order, so
// this table in key order is every owner in the order the store met them.
constexpr TableSpec kOwnerNamesTable{"agent_names", 0};
// Be64 record id -> dup u64 record id: affiliation edges. I7: symmetric,
// no loops, between live records; meta linked counts the keys.
constexpr TableSpec kEdgesTable{"edges", kDupFixedInt};
// Be64 merge seq -> a merge-log entry (encode_merge). I9 (with rmerges):
// every seq is below next_merge, names a live survivor and is indexed in
// rmerges under it; every rmerges entry names a merge of that survivor.
constexpr TableSpec kMergesTable{"merges", 0};
// [Be64 record id][Be64 n] -> a statement (encode_said): every statement
// that ended in the record, as its owner deposited it, so that forget knows
// whose words are whose. Row n = 0 is the statement whose vector the record
// keeps (its creator's, until the creator forgets); its vector lives in
// vectors, not here. The others are keyed by the first merge seq of their
// merge and carry their own vector. I12: every row belongs to a live record,
// names an owner of it, and the record has row 0; row-0-less records are
// those written by schema 1, which have no rows at all.
constexpr TableSpec kSaidTable{"said", 0};
// Batch key (1..256 bytes, the caller's) -> a batch's result
// (encode_batch_result, batch_keys.hpp): the digest of what it deposited and
// per deposit the record ids and merged flags. Written in the batch's own
// transaction, so a retried batch finds it (primary: repair keeps it). I13:
// every row decodes and names only ids in [1, next_id).
constexpr TableSpec kBatchKeysTable{"batch_keys", 0};
// Be64 record id -> [u64 created][u64 updated] microseconds since the epoch
// (record_meta.hpp): when the record was made and when its text, vector or
// owner set last changed (a merge, an update, a forget others survive).
// Records written before schema 3 have no row (their times are unknown).
// Primary. I16: every row is 16 bytes, belongs to a live record, and
// created <= updated.
constexpr TableSpec kTimesTable{"times", 0};
// [Be64 record id][Be32 owner id] -> a JSON object (UTF-8, at most
// kMaxMetadataBytes): the metadata that owner gave its statements of the
// record. Each owner's is its own; a merge never mixes them; a forget deletes
// the owner's row. Primary. I17: every row belongs to a live record and an
// owner of it, and is one JSON object within the limit.
constexpr TableSpec kMetadataTable{"metadata", 0};
// Be64 record id -> u32 scope id: the scope of a record outside the default
// scope (id 0, which has no rows and no name), given when the record is
// created and never changed. Records merge, are candidates and are judged
// only within their scope (store_scopes.cpp). Primary. I14 (with scoped,
// scope_names, scopes_by_name): every row belongs to a live record and
// names a known scope; scoped mirrors it; names and ids are a bijection
// below next_scope; every affiliation edge joins two records of one scope.
constexpr TableSpec kScopesTable{"scopes", 0};
// Be64 record id -> [u64 supersedes][u64 superseded_by] (native; 0 none):
// the record's place in its chain of versions (store_versions.cpp). A
// judge's Supersedes verdict makes a new record the successor of the last
// record of the named one's chain, so a chain is a line, each record newer
// (a higher id) than the one it supersedes. Records without links have no
// row. Primary. I21: every row is 16 bytes with a link, belongs to a live
// record, and links live records of its scope both ways (a's superseded_by
// is b exactly when b's supersedes is a), with supersedes < id <
// superseded_by.
constexpr TableSpec kVersionsTable{"versions", 0};
// Be32 scope id -> dup u64 record id: the reverse of scopes (a scope's
// candidates). Derived.
constexpr TableSpec kScopedTable{"scoped", kDupFixedInt};
// Be32 scope id -> scope name (1 to kMaxOwnerBytes bytes, as owner names). Primary.
constexpr TableSpec kScopeNamesTable{"scope_names", 0};
// Scope name -> u32 scope id, the reverse of scope_names. Derived.
constexpr TableSpec kScopesByNameTable{"scopes_by_name", 0};
// Be64 survivor record id -> dup Be64 merge seq: a record's merge-log
// entries (forget deletes them with the record).
constexpr TableSpec kMergesBySurvivorTable{"rmerges", kDupFixed};
// 16-byte normalized-text digest -> Be64 record id: the exact-duplicate
// index, one digest for every text a record absorbed. I8 (with rnorms): each
// points to a live record and is in rnorms under it, and rnorms points back.
// I19: every digest of a record with said rows is the digest (normalize.py,
// keyed by the record's scope) of one of its texts: its text, a said row's
// text, or a kept or discarded text of its merge log. A digest of another
// text would merge every later deposit of that text into the record.
// Records without said rows (schema 1) keep the digests of statements their
// forgetters took away, so they are not checked.
constexpr TableSpec kNormsTable{"norms", 0};
// Be64 record id -> dup 16-byte digest: the reverse of norms.
constexpr TableSpec kNormsByRecordTable{"rnorms", kDupFixed};
// Be64 journal seq -> a journal entry (encode_journal). I10: every entry is
// well formed, below next_journal, and replaying the adds and deletes gives
// exactly the live records.
constexpr TableSpec kJournalTable{"journal", 0};
// Be32 owner count -> u64 number of records with that many owners (for
// stats(); counts of 0 are deleted). I6: it equals a count over owners.
constexpr TableSpec kHistTable{"hist", 0};
// [Be32 scope id][16-byte word_digest of a word (lexical_words,
// lexical_index.hpp), so no key holds a word forget takes away] ->
// dup 16 bytes [Be64 record id][u32 count of the word][u32 the record's length
// in words]: the lexical index of the records' texts (BM25 candidates), one
// key range per scope. [Be32 scope id] alone -> one 16-byte row [u64 live
// records of the scope][u64 their words]: the scope's BM25 statistics (record
// count, mean length; a word's record count is its key's postings), absent
// for a scope without records. Derived; written only once meta lexical holds
// kLexicalVersion (3: per scope, 4: word digests; an older index is rebuilt on the next
// writable open). I18: the postings are exactly the words of the live
// records' texts under each record's scope, and meta lex_words their total
// length. I20: each scope's statistics row counts exactly its live records
// and their words, so no scope's scores move with another's records.
constexpr TableSpec kLexicalTable{"lex_postings", kDupFixed};

// ------------------------------------------------------------ item tables
//
// The key-value items of a LangGraph store (item_table.hpp), written in the
// transaction of the deposit that indexes them.

// [namespace labels joined by '.'] 0x00 [key] -> [i64 created_us]
// [i64 updated_us][u32 n] n x ([u32 owner id][u64 record]) then the item's
// JSON value (native): the records its indexed texts ended in, each held
// for an owner. Primary. I15 (with lg_item_refs): every row has a namespace
// and decodes; each ref names a record in the owner set of a known owner
// and is in lg_item_refs; every lg_item_refs entry is listed by its row.
constexpr TableSpec kItemsTable{"lg_items", 0};
// [Be64 record id][Be32 owner id] -> dup item key: the items that use the
// record for that owner (search's way back from a hit). Derived.
constexpr TableSpec kItemRefsTable{"lg_item_refs", MDB_DUPSORT};
// ASCII setting name -> UTF-8 value: "embedder" -> the name of the embedder
// the store was created with ("hash", "minilm", "sentence_transformers:NAME",
// "openai:MODEL"), or "" for an unnamed callable. Primary; the engine does
// not read the values.
constexpr TableSpec kSettingsTable{"settings", 0};

// ------------------------------------------------------------ meta keys
//
// The store's identity and counters, in the meta table. The identity keys
// (schema, dim, metric, uuid) are checked at every open; the counters are
// above every id, seq and owner id in use (I2, I3, I9, I10).

struct MetaKey {
    const char* name;
    size_t size;  // bytes of the value
};

// The LMDB key of a meta entry (its name, without the terminating zero).
inline MDB_val meta_key(const MetaKey& key) {
    MDB_val v;
    v.mv_data = const_cast<char*>(key.name);
    v.mv_size = std::strlen(key.name);
    return v;
}

constexpr MetaKey kMetaSchema{"schema", 4};             // u32 kSchemaVersion
constexpr MetaKey kMetaDim{"dim", 4};                   // u32 vector dimensions, 1..kMaxDim
constexpr MetaKey kMetaMetric{"metric", 4};             // u32 Metric: 0 cos, 1 ip, 2 l2sq
constexpr MetaKey kMetaUuid{"uuid", 16};                // the store's identity; repair gives a new one
constexpr MetaKey kMetaNextId{"next_id", 8};            // u64 the next record id
constexpr MetaKey kMetaNextMerge{"next_merge", 8};      // u64 the next merge seq
constexpr MetaKey kMetaNextJournal{"next_journal", 8};  // u64 the next journal seq
constexpr MetaKey kMetaDeposits{"deposits", 8};         // u64 deposits committed (RecordHeader.deposit)
constexpr MetaKey kMetaLinked{"linked", 8};             // u64 records with at least one edge
// u64 the next owner id; named from before the API said "owner" (see above).
constexpr MetaKey kMetaNextOwner{"next_agent", 8};
constexpr MetaKey kMetaLexical{"lexical", 8};       // u64 the word rules' version the lexical index is complete for
constexpr MetaKey kMetaLexWords{"lex_words", 8};    // u64 the words of all live records' texts (BM25's mean length)
constexpr MetaKey kMetaNextScope{"next_scope", 8};  // u64 the next scope id (from 1; 0 is the default scope)

// ------------------------------------------------------------ records

// The value of records: this header, then the kept text (the rest).
struct RecordHeader {
    uint32_t round;    // the round of the deposit that created the record
    uint32_t flags;    // 0; reserved
    uint64_t deposit;  // the ordinal of that deposit (meta deposits after it)
};

inline std::string encode_record(uint32_t round, uint64_t deposit, std::string_view text) {
    std::string v;
    v.reserve(sizeof(RecordHeader) + text.size());
    RecordHeader h{round, 0, deposit};
    v.append(reinterpret_cast<const char*>(&h), sizeof h);
    v.append(text);
    return v;
}

// False when the value is too short to hold a header (a damaged record).
inline bool decode_record(const MDB_val& v, RecordHeader& h, std::string_view& text) {
    if (v.mv_size < sizeof(RecordHeader)) return false;
    std::memcpy(&h, v.mv_data, sizeof h);
    text = std::string_view(static_cast<const char*>(v.mv_data) + sizeof h, v.mv_size - sizeof h);
    return true;
}

// ------------------------------------------------------------ journal
//
// Everything the in-memory index and allow-sets derive from, in commit
// order, so any process can catch up from any point. An entry is
// [u8 op][u64 record][u32 owner] (13 bytes, native, unaligned); owner is 0
// for kDel and in the kAdd entries a repair writes.

enum Op : uint8_t {
    kAdd = 1,     // a record was created (its vector is indexed), owned by owner
    kOwn = 2,     // owner joined the record's owner set
    kDisown = 3,  // owner left it (forget)
    kDel = 4,     // the record was deleted (its last owner left)
};
constexpr size_t kJournalEntry = 13;

struct JournalEntry {
    uint8_t op = 0;
    uint64_t record = 0;
    uint32_t owner = 0;
};

inline std::array<unsigned char, kJournalEntry> encode_journal(const JournalEntry& e) {
    std::array<unsigned char, kJournalEntry> b{};
    b[0] = e.op;
    std::memcpy(b.data() + 1, &e.record, 8);
    std::memcpy(b.data() + 9, &e.owner, 4);
    return b;
}

// False when the value has the wrong size; the op is not checked.
inline bool decode_journal(const MDB_val& v, JournalEntry& e) {
    if (v.mv_size != kJournalEntry) return false;
    const unsigned char* p = static_cast<const unsigned char*>(v.mv_data);
    e.op = p[0];
    std::memcpy(&e.record, p + 1, 8);
    std::memcpy(&e.owner, p + 9, 4);
    return true;
}

// ------------------------------------------------------------ merge log
//
// One entry per text a merge let go of:
// [u64 survivor][u32 owner][u32 round][u32 kept length] kept discarded
// (native, unaligned): the survivor record, the depositing owner and its
// round, the survivor's text after the merge, and the text dropped (the rest).

constexpr size_t kMergeHeader = 8 + 4 + 4 + 4;

struct MergeEntry {
    uint64_t survivor = 0;
    uint32_t owner = 0;
    uint32_t round = 0;
    std::string_view kept, discarded;
};

inline std::string encode_merge(const MergeEntry& m) {
    std::string e;
    e.reserve(kMergeHeader + m.kept.size() + m.discarded.size());
    append<uint64_t>(e, m.survivor);
    append<uint32_t>(e, m.owner);
    append<uint32_t>(e, m.round);
    append<uint32_t>(e, static_cast<uint32_t>(m.kept.size()));
    e.append(m.kept);
    e.append(m.discarded);
    return e;
}

// False when the value is too short for its header or its kept length.
inline bool decode_merge(const MDB_val& v, MergeEntry& m) {
    Reader r(v.mv_data, v.mv_size);
    uint32_t kept_len = 0;
    if (!r.get(m.survivor) || !r.get(m.owner) || !r.get(m.round) || !r.get(kept_len) || !r.get_bytes(kept_len, m.kept))
        return false;
    m.discarded = r.rest();
    return true;
}

// ------------------------------------------------------------ said rows
//
// [u32 owner][u32 round][u32 vector bytes] vector text (native, unaligned):
// the depositing owner and round, the statement's vector as the store keeps
// it (0 bytes in row 0) and its text as deposited (the rest), left out
// (empty) when it is the record's text: a record that never merged holds its
// words once. Every change of a record's text rewrites its rows to match.

constexpr size_t kSaidHeader = 4 + 4 + 4;

struct SaidEntry {
    uint32_t owner = 0;
    uint32_t round = 0;
    std::string_view vector;  // dim native f32, or empty (row 0)
    std::string_view text;
};

// The key of a record's row n.
inline std::array<unsigned char, 16> said_key(uint64_t record, uint64_t n) {
    std::array<unsigned char, 16> k{};
    Be64 r(record), s(n);
    std::memcpy(k.data(), r.b, 8);
    std::memcpy(k.data() + 8, s.b, 8);
    return k;
}

inline std::string encode_said(const SaidEntry& s) {
    std::string e;
    e.reserve(kSaidHeader + s.vector.size() + s.text.size());
    append<uint32_t>(e, s.owner);
    append<uint32_t>(e, s.round);
    append<uint32_t>(e, static_cast<uint32_t>(s.vector.size()));
    e.append(s.vector);
    e.append(s.text);
    return e;
}

// False when the value is too short for its header or its vector.
inline bool decode_said(const MDB_val& v, SaidEntry& s) {
    Reader r(v.mv_data, v.mv_size);
    uint32_t vec_len = 0;
    if (!r.get(s.owner) || !r.get(s.round) || !r.get(vec_len) || !r.get_bytes(vec_len, s.vector)) return false;
    s.text = r.rest();
    return true;
}

// ------------------------------------------------------------ lineage tables
//
// Planfence lineage (cpp/src/lineage/) keeps its tables in the same environment;
// Lineage::verify checks L1..L4.
// Keys of lin_versions and lin_values are [Be32 key id][Be64 version], so one
// key's versions sit together in version order.

// Lineage key name -> KeyRec {u32 key id, u32 owner id, u64 head version}
// (native). L2: a known owner, a unique id below next_key, and a head that is
// a recorded version with a value.
constexpr TableSpec kLineageKeysTable{"lin_keys", 0};
// 'n' + owner name -> u32 owner id; 'i' + Be32 owner id -> owner name.
// L1: the two directions agree, every id below next_owner.
constexpr TableSpec kLineageOwnersTable{"lin_owners", 0};
// (key id, version) -> version record: digest[16] kind:u8 n:u32, then n
// inputs of owner:u32 version:u64 digest[16] derived:u8 name_len:u16 name
// (names inline, so a frontier walk needs no lookup per link). L3: of a known
// key, not past its head, with a value; every input names a recorded version
// of a key of that owner, with that digest and derived flag.
constexpr TableSpec kLineageVersionsTable{"lin_versions", 0};
// (key id, version) -> the version's value bytes. L4: each belongs to a
// version.
constexpr TableSpec kLineageValuesTable{"lin_values", 0};
// ASCII counter name -> u64: next_owner, next_key (the next ids to give).
constexpr TableSpec kLineageMetaTable{"lin_meta", 0};
constexpr MetaKey kLineageNextOwner{"next_owner", 8};
constexpr MetaKey kLineageNextKey{"next_key", 8};

// ------------------------------------------------------------ index file
//
// <store>/index.usearch, a rebuildable cache of the vectors: the 8-byte magic
// "ASIDX003", then IndexHeader (native), then usearch's serialization of the
// HNSW graph (body_bytes bytes), whose own header names the vectors' kind:
// int8 under cos, f32 otherwise. It is served only when its uuid is the
// store's, journal_seq is not past the store's journal, dim and metric match
// and the body's checksum is right; anything else rebuilds it. It is written
// to index.usearch.tmp.<pid>, fsynced and renamed over.

constexpr const char* kIndexFile = "/index.usearch";
// 002: the header carries the body's size and checksum. Files of 001 read as
// damaged, so the index is rebuilt once.
// 003: the body may hold int8 vectors (cos stores), which an engine of 002
// would misread as f32, so it reads 003 as damaged and rebuilds. A 002 file
// (f32) is still served as it is, until the index is next rebuilt.
constexpr char kIndexMagic[8] = {'A', 'S', 'I', 'D', 'X', '0', '0', '3'};
constexpr char kIndexMagicF32[8] = {'A', 'S', 'I', 'D', 'X', '0', '0', '2'};

struct IndexHeader {
    unsigned char store_uuid[16];  // meta uuid of the store it indexes
    uint64_t journal_seq;          // the last journal entry the saved index reflects
    uint32_t dim;
    uint32_t metric;
    uint64_t body_bytes;  // the usearch serialization that follows
    uint64_t body_sum;    // checksum64 of it: a damaged file is never mapped or loaded
};
static_assert(sizeof(IndexHeader) == 48, "the index file header is part of the file format");

}  // namespace agentsensus
