// The consensus store engine's API: records, owner sets, affiliation edges
// and the merge log in one environment on disk, with a vector index as a
// rebuildable cache of the vectors. Neither storage nor index shows here:
// StoreImpl (cpp/src/store/store_impl.hpp) holds them and does the work.
// Never calls back into the caller: the deposit path is split into prepare
// (read snapshot) and commit (one write transaction) so the judge runs
// between them with no transaction held.
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agentsensus/options.hpp"
#include "agentsensus/recall_filter.hpp"
#include "agentsensus/rows.hpp"

namespace agentsensus {

class StoreImpl;
class Lineage;

class Store {
public:
    Store(const std::string& dir, const StoreOptions& o);
    ~Store();
    Store(const Store&) = delete;
    Store& operator=(const Store&) = delete;

    uint32_t dim() const;
    Metric metric() const;
    bool readonly() const;

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
    // and the result says conflict (the conflicts: see commit_deposit).
    // With items, the transaction applies those item writes after the
    // deposits (ItemTable::write), so a put is one transaction; a record it
    // lets go of that only its owner held goes in it too (result.unused:
    // the others).
    // With batch, its key and result are recorded in the same transaction; a
    // key recorded meanwhile is a conflict too (the caller then finds it).
    // InvalidArgument when a plan's fields disagree in length (nothing written).
    CommitResult commit(const std::vector<CommitPlan>& plans, uint64_t prepared_seq, float min_similarity,
                        const BatchKey* batch = nullptr, const std::vector<ItemWrite>* items = nullptr);
    // Item writes that ride in no deposit, in one transaction; as in a
    // commit with items, records only their owner held go in it too, and
    // the other refs let go of are returned (the caller forgets them).
    std::vector<ItemRef> write_items(const std::vector<ItemWrite>& writes);
    // The LangGraph items of the store: one (namespace, key); the items
    // under a namespace prefix; every namespace; the owner's items that use
    // the records; a page in (namespace, key) order after the given one; how
    // many there are.
    std::optional<ItemRow> item(std::string_view ns, std::string_view key);
    std::vector<ItemRow> items_under(std::string_view prefix);
    std::vector<std::string> item_namespaces();
    std::vector<std::pair<uint64_t, ItemRow>> items_of(const std::string& owner, const std::vector<uint64_t>& records);
    std::vector<ItemRow> items_page(const std::string& after_ns, const std::string& after_key, size_t limit);
    size_t item_count();
    // The store's settings (named strings): one, or set one.
    std::optional<std::string> setting(std::string_view name);
    void set_setting(std::string_view name, std::string_view value);
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

    // filter (agentsensus/recall_filter.hpp) keeps hits and expansion rows to those that
    // pass; hits scoring below threshold are dropped before expansion.
    std::vector<Row> recall(const std::string& owner, const float* query, size_t k, bool expand,
                            const RecallFilter& filter = RecallFilter(),
                            float threshold = -std::numeric_limits<float>::infinity());
    // recall of each (owners[i], query row i) (with scope: recall_scoped),
    // queries n x dim() row-major. One snapshot for the whole batch: all
    // answers describe one state of the store, each equal to the single
    // recall on it. The queries run across a few threads, each with its own
    // read transaction (store_recall_many.cpp); every query is checked
    // before any is run. on_answer, when given, receives each answer (its
    // index and rows) as soon as it is complete, on the worker thread that
    // made it, and the answer is left empty in the result: the caller can
    // use answers while others are still being made.
    using AnswerFn = std::function<void(size_t, std::vector<Row>&&)>;
    std::vector<std::vector<Row>> recall_many(const std::vector<std::string>& owners, const float* queries, size_t k,
                                              bool expand, const RecallFilter& filter = RecallFilter(),
                                              float threshold = -std::numeric_limits<float>::infinity(),
                                              const std::optional<std::string>& scope = std::nullopt,
                                              const AnswerFn& on_answer = nullptr);
    // With owner, the row carries that owner's metadata.
    Row get(uint64_t id, const std::string& owner = std::string());
    // A record's times and every owner's metadata, for export and import
    // (store_store_record_meta.cpp): ids ascending after `after`, at most limit rows
    // (records without times or metadata are left out).
    std::vector<MetaDump> meta_dump(uint64_t after, size_t limit);
    // The record's merge-log entries, seq ascending (its history; store_store_record_meta.cpp).
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
    // The chain of versions record id belongs to, oldest first (itself
    // alone when nothing supersedes it or is superseded by it; NotFound
    // when absent). A record is superseded for an owner once that owner
    // holds a later record of its chain; recall shows an owner only records
    // current for it, and with a filter's as_of, what it held at that round.
    std::vector<uint64_t> chain(uint64_t id);
    // Each record's links, on one snapshot (all 0 for an absent record).
    std::vector<VersionLinks> versions_of(const std::vector<uint64_t>& ids);

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

    // The lexical index (lexical/lexical_index.hpp). lexical_built: it is complete
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
    bool closed() const;

private:
    friend class Lineage;  // its tables live in the store's environment
    std::unique_ptr<StoreImpl> impl_;
};

}  // namespace agentsensus
