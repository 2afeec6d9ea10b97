// The consensus store engine: records, owner sets, affiliation edges and the
// merge log in one LMDB environment, with a usearch index as a rebuildable
// cache of the vectors. Never calls back into Python: the deposit path is
// split into prepare (read snapshot) and commit (one write transaction) so the
// judge runs between them with no transaction held.
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "agentsensus/options.hpp"
#include "agentsensus/recall_filter.hpp"
#include "agentsensus/rows.hpp"
#include "format/batch_keys.hpp"
#include "format/record_meta.hpp"
#include "format/schema.hpp"
#include "index/crowd_gauge.hpp"
#include "index/similarity.hpp"
#include "index/vector_index.hpp"
#include "lexical/lexical_index.hpp"
#include "lmdb/lmdb_env.hpp"
#include "lmdb/prefetch.hpp"
#include "store/item_table.hpp"
#include "store/recall_filter.hpp"
#include "store/settings_table.hpp"

namespace agentsensus {

// What to do with one statement at commit. target: 0 makes a new record;
// > 0 merges into that record; < 0 merges into the (-target)-th new record of
// this commit (1-based). For merges, expected is the survivor's text the
// caller's policy saw (a mismatch is a conflict) and kept is its text after.
struct StatementPlan {
    std::string_view text;
    const unsigned char* digest = nullptr;  // kDigestBytes
    const float* vector = nullptr;          // dim floats, as given
    int64_t target = 0;
    std::string_view expected;
    std::string_view kept;
    std::string_view metadata;  // a JSON object for (record, owner), or empty: leave it as it is
    int64_t supersedes = 0;     // a new record's predecessor (as target: > 0 committed, < 0 of this commit)
};

struct DepositPlan {
    std::string owner;
    uint32_t round = 0;
    std::string scope;  // "" the default scope; its records merge only with records of this scope
    std::vector<StatementPlan> statements;
};

// The store's implementation behind Store (agentsensus/store.hpp): the
// same public methods, and the members of each concern in the store_*.cpp
// file named for it.
class StoreImpl {
public:
    StoreImpl(const std::string& dir, const StoreOptions& o);
    ~StoreImpl();
    StoreImpl(const StoreImpl&) = delete;
    StoreImpl& operator=(const StoreImpl&) = delete;

    uint32_t dim() const { return dim_; }
    Metric metric() const { return metric_; }
    bool readonly() const { return env_->readonly(); }
    // The LMDB environment, for components that keep their own tables in it
    // (lineage). They must open their tables right after the store opens.
    Env& env() {
        check_open();
        return *env_;
    }

    // Phase 1: nearest records for each statement, on a read snapshot.
    // Candidates and exact duplicates come only from the records of scope
    // ("" the default scope; an unknown name has none). near_k > 0 searches
    // that much deeper and reports the records at or above near_floor that
    // are not candidates (PrepareResult::near: a deposit's lexical gate).
    PrepareResult prepare(const float* vectors, size_t n, const unsigned char* digests, size_t k, float min_similarity,
                          std::string_view scope = {}, size_t near_k = 0,
                          float near_floor = std::numeric_limits<float>::infinity());
    // Phase 3: apply plans in one write transaction. If the store moved since
    // prepared_seq in a way that could change a decision, nothing is written
    // and the result says conflict (the four conflicts: see commit_deposit).
    // With items, the transaction applies those item writes after the
    // deposits (ItemTable::write), so a put is one transaction; a record it
    // lets go of that only its owner held goes in it too (result.unused:
    // the others).
    // With batch, its key and result are recorded in the same transaction; a
    // key recorded meanwhile is a conflict too (the caller then finds it).
    CommitResult commit(const std::vector<DepositPlan>& plans, uint64_t prepared_seq, float min_similarity,
                        const BatchKey* batch = nullptr, const std::vector<ItemWrite>* items = nullptr);
    // The same from plans that own their data (InvalidArgument when a
    // plan's fields disagree in length, nothing written).
    CommitResult commit(const std::vector<CommitPlan>& plans, uint64_t prepared_seq, float min_similarity,
                        const BatchKey* batch = nullptr, const std::vector<ItemWrite>* items = nullptr);
    // Item writes that ride in no deposit, in one transaction; as in a
    // commit with items, records only their owner held go in it too, and
    // the other refs let go of are returned (the caller forgets them).
    std::vector<ItemRef> write_items(const std::vector<ItemWrite>& writes);
    // The LangGraph items and the settings of the store (item_table.hpp, settings_table.hpp).
    ItemTable& items() {
        check_open();
        return *items_;
    }
    SettingsTable& settings() {
        check_open();
        return *settings_;
    }
    // The result recorded under a batch key, if any (store_batch_keys.cpp).
    std::optional<BatchResult> batch_result(const std::string& key);
    // Batch keys in key order after `after` ("" from the first), at most limit (export).
    std::vector<std::pair<std::string, BatchResult>> batch_keys(const std::string& after, size_t limit);
    // Records imported batch keys in one transaction (a key already there is refused).
    void load_batch_keys(const std::vector<std::pair<std::string, BatchResult>>& rows);

    // Vectors as the store keeps them (checked; unit length under cos), n rows.
    void prepare_vectors(const float* in, size_t n, float* out) const;
    // out[i * m + j]: the similarity of kept vector j to kept vector query i,
    // as commit compares them (the planner's check of a batch's new records).
    void similarities(const float* queries, size_t n, const float* kept, size_t m, float* out) const;

    // filter (recall_filter.hpp) keeps hits and expansion rows to those that
    // pass; hits scoring below threshold are dropped before expansion.
    std::vector<Row> recall(const std::string& owner, const float* query, size_t k, bool expand,
                            const RecallFilter& filter = RecallFilter(),
                            float threshold = -std::numeric_limits<float>::infinity());
    // recall (or, with scope, recall_scoped) of each (owners[i], query row
    // i) on one snapshot, across threads (store_recall_many.cpp).
    std::vector<std::vector<Row>> recall_many(const std::vector<std::string>& owners, const float* queries, size_t k,
                                              bool expand, const RecallFilter& filter, float threshold,
                                              const std::optional<std::string>& scope,
                                              const std::function<void(size_t, std::vector<Row>&&)>& on_answer);
    // With owner, the row carries that owner's metadata.
    Row get(uint64_t id, const std::string& owner = std::string());
    // A record's times and every owner's metadata, for export and import
    // (store_store_record_meta.cpp): ids ascending after `after`, at most limit rows
    // (records without times or metadata are left out).
    using MetaDump = agentsensus::MetaDump;
    std::vector<MetaDump> meta_dump(uint64_t after, size_t limit);
    // The record's merge-log entries, seq ascending (its history; store_record_meta.cpp).
    std::vector<MergeRow> merges_of(uint64_t id);
    // Writes imported times and metadata in one transaction: each row names a
    // live record, each owner one of its owners (else InvalidArgument, nothing written).
    void load_meta(const std::vector<MetaDump>& rows);
    // The sole owner rewrites the record in place: text, vector (kept form),
    // digest, its statements (one, row 0), a merge-log entry of the text let
    // go of, updated time and (unless empty) its metadata. False: a conflict
    // (the text is no longer expected_text), nothing written. InvalidArgument
    // when others own it too (store_store_record_meta.cpp).
    bool update(const std::string& owner, uint64_t id, std::string_view expected_text, std::string_view text,
                const unsigned char* digest, const float* vector, uint32_t round, std::string_view metadata);
    std::vector<uint64_t> neighbors(uint64_t id);
    std::vector<uint64_t> owned(const std::string& owner);
    // The chain of versions record id is part of, oldest first (store_versions.cpp).
    std::vector<uint64_t> chain(uint64_t id);
    std::vector<VersionLinks> versions_of(const std::vector<uint64_t>& ids);
    // A record's links in the versions table (0: none).
    struct Links {
        uint64_t supersedes = 0, superseded_by = 0;
    };

    // Scopes (store_scopes.cpp). A record's scope is the one of the deposit that
    // created it ("" the default scope) and never changes. The scope of a
    // record (NotFound when absent); of many ("" for absent ones too); every
    // named scope, in the order the store met them.
    std::string scope_of(uint64_t id);
    std::vector<std::string> scopes_of(const std::vector<uint64_t>& ids);
    std::vector<std::string> scope_names();
    // recall kept to the owner's records of one scope (an exact scan of
    // them; an unknown scope has none).
    std::vector<Row> recall_scoped(const std::string& owner, const std::string& scope, const float* query, size_t k,
                                   bool expand, const RecallFilter& filter = RecallFilter(),
                                   float threshold = -std::numeric_limits<float>::infinity());
    // owner leaves the record. The last owner deletes it; otherwise the
    // owner's statements leave the said table and the merge log, and the
    // record takes plan's text, vector and digests. False: a conflict (the
    // record changed since the caller read it), nothing written.
    bool forget(const std::string& owner, uint64_t id, const ForgetPlan& plan);
    // The record's text and its said rows, n ascending (NotFound when absent).
    std::pair<std::string, std::vector<SaidRow>> said(uint64_t id);
    Stats stats();
    // The same counts for one scope's live records only (store_scopes.cpp): merges
    // of its records, owners among its records, and as deposits the deposits
    // that created its live records; nothing of another scope shows.
    Stats stats(std::string_view scope);
    std::vector<MergeRow> merges(uint64_t after_seq, size_t limit);

    // Records in id order after `after`, at most limit of them (export, repair).
    std::vector<Row> records(uint64_t after, size_t limit);

    // Records in id order after `after` with vectors and digests (export).
    std::vector<DumpRow> dump(uint64_t after, size_t limit);
    Counters counters();
    // Every owner name the store has seen, in the order it first saw them.
    std::vector<std::string> owner_names();
    // Writes one batch of an import in one transaction; any error leaves the
    // store unchanged. See LoadBatch.
    void restore(const LoadBatch& b);

    // The normalized-text digest of a text in a scope ("" the default), as
    // deposits compute it (the caller's normalization: the engine has none).
    using DigestFn = std::function<std::string(std::string_view text, std::string_view scope)>;
    // Every broken invariant in plain words; empty when the store is sound.
    // One read transaction for all of them, with the index caught up to
    // exactly that snapshot, so a writer in another process is never
    // reported as damage. With digest, I19 too (each text digest is one of
    // its record's texts').
    std::vector<std::string> verify(const DigestFn& digest = nullptr);
    // Rebuilds the derived tables, the journal and the index from the
    // primary ones (records, vectors, owner sets, edges, names, merge log),
    // dropping records that cannot be served. digests: (record, normalized
    // text digest) pairs for the exact-duplicate index. Needs exclusive use.
    void repair(const std::vector<std::pair<uint64_t, std::string>>& digests);
    // Throws Error when another process has the store open (repair would
    // refuse it); returns otherwise, holding nothing.
    void check_alone();

    // The lexical index (lexical_index.hpp). lexical_built: it is complete
    // (a store from before it is not, until build_lexical or repair).
    bool lexical_built();
    // Indexes every record's words in one write transaction (a writable
    // open of an older store does this first); progress(done, total).
    void build_lexical(const std::function<void(uint64_t, uint64_t)>& progress);
    // Each query's lexical top k on one read snapshot, as overlay (a batch's
    // staged texts) leaves the store. See LexicalAnswer.
    // Only records of scope are hits ("" the default scope).
    LexicalAnswer lexical(const std::vector<LexicalQuery>& queries, size_t k,
                          const std::vector<LexicalOverlay>& overlay, std::string_view scope = {});
    // Each text's words with their count in it and the records of scope that
    // hold them, as the overlay leaves the scope, and the scope's record count
    // and mean length in words: the statistics BM25 ranks a deposit's lexical
    // candidates with (store_lexical.cpp).
    LexicalWordCounts lexical_word_counts(const std::vector<std::string>& texts,
                                          const std::vector<LexicalOverlay>& overlay, std::string_view scope = {});
    // recall with the vector and the lexical ranking of the owner's records
    // fused (reciprocal rank fusion); lexical[i] is row i's BM25 score.
    std::vector<Row> recall_fused(const std::string& owner, const float* query, std::string_view text, size_t k,
                                  bool expand, std::vector<float>& lexical);

    // Catches the index up to the journal and saves it with that journal seq
    // (returned), so a later open replays only the entries after it.
    uint64_t checkpoint();
    // Saves the index if it changed; the store is unusable afterwards.
    void close();
    bool closed() const { return env_ == nullptr; }

private:
    friend class Verifier;  // verify()'s invariant checks (integrity.cpp)
    friend class Repairer;  // repair()'s steps (integrity.cpp)

    // One handle per table of schema.hpp.
    struct Dbs {
        MDB_dbi meta, records, vectors, owners, owned, owners_by_name, owner_names, edges, merges, rmerges, norms,
            rnorms, journal, hist, said, batch_keys, times, metadata, scopes, scoped, scope_names, scopes_by_name,
            versions;
    };
    // A record another writer added after a commit's prepare, with its vector.
    struct Rival {
        uint64_t id;
        std::vector<float> vector;
        uint32_t scope = 0;  // only a rival of the deposit's scope can conflict
    };
    // The records one scope holds, as prepare filters candidates by them:
    // not filtered when the store holds no record outside the default scope
    // and the default one is asked for; else the scope's ids, ascending, and
    // the same as a bitset.
    struct ScopeView {
        bool filtered = false;
        std::vector<uint64_t> ids, bits;
        bool contains(uint64_t id) const;
    };

    void check_open() const;
    void init_or_check(const StoreOptions& o);
    void open_index();
    void rebuild_index_locked(MDB_txn* txn);
    void catch_up_locked(MDB_txn* txn);
    void sync_index();
    uint64_t journal_end(MDB_txn* txn);
    void prepare_vector(const float* in, float* out) const;

    bool read_row(MDB_txn* txn, uint64_t id, Row& row);
    std::string owner_name(MDB_txn* txn, uint32_t owner);
    std::optional<uint32_t> owner_id(MDB_txn* txn, std::string_view name);
    bool owns(MDB_txn* txn, uint32_t owner, uint64_t id);
    size_t owned_count(MDB_txn* txn, uint32_t owner);
    std::vector<uint64_t> owned_ids(MDB_txn* txn, uint32_t owner);
    bool vector_of(MDB_txn* txn, uint64_t id, float* out);

    // The steps of recall: the owner's allow-set for a filtered search, the
    // search of the whole graph kept to the owner's, the exact scan, and the
    // rows with their edges.
    // A recall's plan, from one snapshot: the owner's records scanned
    // exactly or searched for in the graph (store_recall.cpp). No oid: the
    // owner owns nothing.
    struct RecallPlan {
        std::optional<uint32_t> oid;
        size_t count = 0, total = 0, wanted = 0;
        bool exact = true;
    };
    RecallPlan plan_recall(MDB_txn* txn, const std::string& owner, size_t k);
    std::vector<Row> recall_planned(MDB_txn* txn, const RecallPlan& plan, const float* q, size_t k, bool expand,
                                    const RecallFilter& filter, float threshold);
    std::vector<Row> recall_scoped_in(MDB_txn* txn, const std::string& owner, const std::string& scope, const float* q,
                                      size_t k, bool expand, const RecallFilter& filter, float threshold);
    // Read transactions on one snapshot, one per worker (store_recall_many.cpp).
    std::vector<std::unique_ptr<ReadTxn>> same_snapshot(size_t workers);
    size_t search_cost(size_t width) const;                   // in scanned vectors
    bool neighbourhoods_crowded(MDB_txn* txn, size_t total);  // crowd_'s verdict, measured when due
    void ensure_allow_set(uint32_t owner);
    bool search_owned(MDB_txn* txn, uint32_t owner, const float* q, size_t k, size_t count, size_t total, size_t wanted,
                      std::vector<Hit>& hits, const RecallFilter& filter = RecallFilter(), bool trust_bits = true);
    // scanned (when given) receives the ids the scan read, ascending.
    std::vector<Hit> scan_owned(MDB_txn* txn, uint32_t owner, const float* q, size_t k,
                                const RecallFilter& filter = RecallFilter(),
                                std::shared_ptr<const std::vector<uint64_t>>* scanned = nullptr);
    std::vector<Row> recall_rows(MDB_txn* txn, uint32_t owner, const std::vector<Hit>& hits, bool expand,
                                 const RecallFilter& filter = RecallFilter(),
                                 const std::vector<uint64_t>* members = nullptr);
    // Whether record id passes filter for owner oid (store_recall_filter.cpp).
    bool passes(MDB_txn* txn, uint32_t oid, uint64_t id, const RecallFilter& filter);
    // Keeps the ids (ascending) that pass, reading with forward cursors (store_recall_filter.cpp).
    void keep_passing(MDB_txn* txn, uint32_t oid, std::vector<uint64_t>& ids, const RecallFilter& filter);
    // The owner's ids that pass the filter in txn's snapshot, as a scan last
    // found them there (null when no scan did); remember_passing keeps them.
    std::shared_ptr<const std::vector<uint64_t>> passing_ids(MDB_txn* txn, uint32_t oid, const RecallFilter& filter);
    void remember_passing(MDB_txn* txn, uint32_t oid, const RecallFilter& filter,
                          std::shared_ptr<const std::vector<uint64_t>> ids);
    // The side tables of record_meta.hpp (store_store_record_meta.cpp): reads into a
    // row, stamps (created and updated, or updated only), an owner's
    // metadata (checked first), and the deletes of a record's or an owner's rows.
    void read_record_meta(MDB_txn* txn, uint64_t id, uint32_t oid, Row& row);
    void stamp_times(MDB_txn* txn, uint64_t id, bool created);
    void put_metadata(MDB_txn* txn, uint64_t id, uint32_t oid, std::string_view json);
    void drop_metadata(MDB_txn* txn, uint64_t id, uint32_t oid);  // oid 0: every owner's
    void drop_times(MDB_txn* txn, uint64_t id);
    std::vector<uint64_t> neighbors_in(MDB_txn* txn, uint64_t id);
    std::vector<SaidRow> said_rows(MDB_txn* txn, uint64_t id);
    // The forget of one owner from a record others keep (forget's write).
    bool forget_words(MDB_txn* txn, uint64_t id, uint32_t owner, const ForgetPlan& plan);
    // forget's write, inside txn (CommitAbort on a conflict).
    void forget_in(MDB_txn* txn, const std::string& owner, uint64_t id, const ForgetPlan& plan);
    // The refs an item write let go of: those of records only their owner
    // held are forgotten in txn; the others are returned.
    std::vector<ItemRef> forget_private(MDB_txn* txn, const std::vector<ItemRef>& unused);

    // The steps of commit, in order (all but validate_plans inside its write
    // transaction). validate_plans checks and normalizes every statement
    // before the transaction; added_since reads what other writers added
    // after prepare; commit_deposit applies one deposit, statement by
    // statement, and returns the first conflict: a new record meets
    // new_record_conflict then create_record, a merge meets merge_conflict
    // then merge_into; link_deposit joins the records the deposit ended in.
    std::vector<std::vector<float>> validate_plans(const std::vector<DepositPlan>& plans) const;
    std::vector<Rival> added_since(MDB_txn* txn, uint64_t prepared_seq);
    std::optional<std::string> commit_deposit(MDB_txn* txn, const DepositPlan& d, const float* vectors,
                                              const std::vector<Rival>& rivals, float min_similarity, Counters& c,
                                              std::vector<uint64_t>& staged, std::vector<uint64_t>& ids);
    std::optional<std::string> new_record_conflict(MDB_txn* txn, const StatementPlan& s, const float* v,
                                                   const std::vector<Rival>& rivals, float min_similarity,
                                                   uint32_t scope);
    void create_record(MDB_txn* txn, uint64_t id, const StatementPlan& s, const float* v, uint32_t owner,
                       uint32_t round, uint64_t deposit);
    std::optional<std::string> merge_conflict(MDB_txn* txn, uint64_t id, const StatementPlan& s);
    void merge_into(MDB_txn* txn, uint64_t id, const StatementPlan& s, const float* v, uint32_t owner, uint32_t round,
                    uint64_t& next_merge);
    void link_deposit(MDB_txn* txn, const std::vector<uint64_t>& ids);

    // The steps of restore (an import batch): its rows checked before the
    // transaction, then each record, each merge, and the counters loaded.
    void check_dump_row(const DumpRow& r) const;
    void load_row(MDB_txn* txn, const DumpRow& r);
    void load_merge(MDB_txn* txn, const MergeRow& m);
    void load_counters(MDB_txn* txn, const Counters* given, uint64_t last, uint64_t last_merge);

    // Scope helpers (store_scopes.cpp). scope_view: the records of a scope for
    // prepare; search_scope: the graph search kept to them, widening, or an
    // exact scan of them (index only: safe on prepare's worker threads).
    // record_scope: 0 for the default scope (no row). ensure_scope gives a
    // new name the next id; put_scope and drop_scope keep scopes and scoped
    // together. verify_scopes checks I14; repair_scopes drops the records
    // whose scope cannot be named and the edges across scopes, then
    // rebuilds the derived scope tables for the records kept.
    ScopeView scope_view(MDB_txn* txn, std::string_view scope);
    std::vector<Hit> search_scope(const ScopeView& sv, const float* q, size_t k, size_t total) const;
    uint32_t record_scope(MDB_txn* txn, uint64_t id);
    std::optional<uint32_t> scope_id(MDB_txn* txn, std::string_view name);
    std::string scope_name(MDB_txn* txn, uint32_t sid);
    uint32_t ensure_scope(MDB_txn* txn, std::string_view name);
    void put_scope(MDB_txn* txn, uint64_t id, uint32_t sid);
    void drop_scope(MDB_txn* txn, uint64_t id);
    void verify_scopes(MDB_txn* txn, const std::set<uint64_t>& records, const std::function<void(std::string)>& bad);
    void repair_scopes(MDB_txn* txn, std::set<uint64_t>& keep);
    // I16 (times) and I17 (metadata), store_record_meta.cpp: verify reports rows of
    // absent records, metadata of non-owners, and damaged values; repair
    // drops them (after the owner sets are rebuilt).
    void verify_record_meta(MDB_txn* txn, const std::set<uint64_t>& records,
                            const std::function<void(std::string)>& bad);
    void repair_record_meta(MDB_txn* txn, const std::set<uint64_t>& keep);

    // Versions (store_versions.cpp). has_versions: the snapshot holds a
    // supersession (else no recall pays for checking). versioned: the filter
    // a recall of txn's snapshot uses. current_for: id is not superseded for
    // owner oid (now, or at the filter's as_of round, which also needs oid
    // to have held it by then). supersede links a new record after the last
    // of old_id's chain; unlink_versions joins a deleted record's chain
    // around it. read_links fills a row's links.
    static constexpr size_t kMaxChainSteps = 1u << 20;
    bool has_versions(MDB_txn* txn);
    RecallFilter versioned(MDB_txn* txn, const RecallFilter& f);
    Links links_of(MDB_txn* txn, uint64_t id);
    void put_links(MDB_txn* txn, uint64_t id, const Links& l);
    uint32_t joined_round(MDB_txn* txn, uint32_t oid, uint64_t id);
    bool current_for(MDB_txn* txn, uint32_t oid, uint64_t id, const RecallFilter& f);
    std::shared_ptr<const std::unordered_set<uint64_t>> superseded_ids(MDB_txn* txn);
    void supersede(MDB_txn* txn, uint64_t old_id, uint64_t new_id);
    void unlink_versions(MDB_txn* txn, uint64_t id);
    void read_links(MDB_txn* txn, uint64_t id, Row& row);
    void verify_versions(MDB_txn* txn, const std::set<uint64_t>& records, const std::function<void(std::string)>& bad);
    void repair_versions(MDB_txn* txn, const std::set<uint64_t>& keep);

    // Write-side helpers (inside a write transaction).
    uint32_t ensure_owner(MDB_txn* txn, std::string_view name);
    void journal(MDB_txn* txn, uint8_t op, uint64_t id, uint32_t owner);
    void hist_add(MDB_txn* txn, uint32_t owners, int64_t delta);
    bool add_owner(MDB_txn* txn, uint64_t id, uint32_t owner);
    void add_edge(MDB_txn* txn, uint64_t a, uint64_t b);
    void add_digest(MDB_txn* txn, uint64_t id, MDB_val digest);
    void delete_record(MDB_txn* txn, uint64_t id);
    void put_said(MDB_txn* txn, uint64_t id, uint64_t n, uint32_t owner, uint32_t round, const float* vector,
                  std::string_view text);
    // Deletes a record's said rows, all (owner 0) or one owner's; zeroes each
    // value in place first, so the words leave the live page too.
    void delete_said(MDB_txn* txn, uint64_t id, uint32_t owner);
    // fn(key, entry) for each of a record's said rows, n ascending (none without the table).
    void each_said(MDB_txn* txn, uint64_t id, const std::function<void(const MDB_val&, const SaidEntry&)>& fn);
    void scrub_del(MDB_txn* txn, MDB_dbi dbi, MDB_val key);
    void retext_said(MDB_txn* txn, uint64_t id, std::string_view after);
    void scrub_merges(MDB_txn* txn, uint64_t id, uint32_t owner, const std::unordered_set<std::string>* texts);
    void drop_text_digests(MDB_txn* txn, uint64_t id);
    // One merge-log entry at seq, indexed under its survivor.
    void put_merge(MDB_txn* txn, uint64_t seq, uint64_t survivor, uint32_t owner, uint32_t round, std::string_view kept,
                   std::string_view discarded);
    uint64_t meta_u64(MDB_txn* txn, const MetaKey& key, uint64_t dflt = 0);
    void set_meta_u64(MDB_txn* txn, const MetaKey& key, uint64_t v);
    Counters read_counters(MDB_txn* txn);
    void write_counters(MDB_txn* txn, const Counters& c);

    std::string dir_;
    std::unique_ptr<Env> env_;
    Dbs db_{};
    uint32_t dim_ = 0;
    Metric metric_ = Metric::cos;
    size_t exact_cutoff_ = 4096;
    size_t expansion_search_ = 64;  // usearch's search width: a search of k costs max(k, this)
    unsigned char uuid_[16] = {};
    bool has_said_ = true;         // false: a read-only open of a schema-1 store
    bool has_batch_keys_ = true;   // false: a read-only open of a schema-1 or 2 store
    bool has_record_meta_ = true;  // false: a read-only open of a schema-1 or 2 store (no times, no metadata)
    bool has_scopes_ = true;       // false: a read-only open of a schema-1 or 2 store (all in the default scope)
    bool has_versions_ = true;     // false: a read-only open of a schema-1 to 3 store (no supersessions)

    // The index and everything derived from the journal, under one lock:
    // searches share it, catch-up takes it exclusively.
    std::shared_mutex index_mu_;
    std::unique_ptr<VectorIndex> index_;
    // Whether the candidates' reads meet a cold page cache, and the read of
    // data.mdb into it after open (prefetch.hpp).
    ColdGauge cold_;
    std::unique_ptr<FileWarmer> warmer_;
    std::unique_ptr<LexicalIndex> lexical_;  // its own table; LMDB orders it with the records
    std::unique_ptr<ItemTable> items_;
    std::unique_ptr<SettingsTable> settings_;
    uint64_t applied_seq_ = 0;  // journal entries reflected in index_
    uint64_t saved_seq_ = 0;    // what the index file on disk reflects
    bool index_saved_valid_ = false;
    std::unordered_map<uint32_t, std::vector<uint64_t>> allow_;  // per-owner owned-id bitsets
    CrowdGauge crowd_;  // whether owner searches start at the crowded rule's wider width

    std::mutex names_mu_;
    std::unordered_map<uint32_t, std::string> names_;  // committed owner names

    // The latest few filters' passing ids, each valid in one snapshot only
    // (LMDB's txn id names a snapshot: same id, same data), so a filter
    // repeated between commits is not evaluated again (store_recall_filter.cpp).
    struct PassingIds {
        size_t snapshot;
        uint32_t oid;
        std::string spec;
        std::shared_ptr<const std::vector<uint64_t>> ids;
    };
    std::mutex passing_mu_;
    std::vector<PassingIds> passing_;

    // The records some record supersedes, as of one snapshot (LMDB's txn
    // id), so that the validity check of a record nothing supersedes (almost
    // every record) is a set lookup, not a read (store_versions.cpp).
    struct Superseded {
        size_t snapshot = 0;
        std::shared_ptr<const std::unordered_set<uint64_t>> ids;
    };
    std::mutex superseded_mu_;
    Superseded superseded_;
};

}  // namespace agentsensus
