// The lexical index: every live record's text as words, in one table of the
// store's LMDB environment (kLexicalTable, schema.hpp), written in the same
// write transaction as the record. It is derived: repair rebuilds it from the
// records, verify checks it (I18). Deposits use it for candidates a vector
// search misses (a witness's frame, "I heard X say ...", can outweigh the
// content in the vector); recall may fuse it with the vector ranking.
//
// Scoring is BM25 (k1 = 1.2, b = 0.75) over the words of the live records'
// texts of one scope, every word of the query counted, exactly: the postings
// and the statistics (records, words, a word's records) are kept per scope,
// so no score moves with another scope's records; the search prunes by
// max score, so a frequent word's long posting list is read only for the
// records that may still reach the top k.
#pragma once
#include <lmdb.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "agentsensus/rows.hpp"
#include "lexical/posting_counts.hpp"
#include "lexical/word_table.hpp"
#include "lmdb/lmdb_env.hpp"

namespace agentsensus {

// The version of the word rules below; a store whose meta lexical differs
// rebuilds the index on its next writable open. 2: a lone digit is a word.
// 3: postings and statistics per scope. 4: a posting's key holds a digest
// of its word, not the word (keys [Be32 scope][word_digest]).
constexpr uint64_t kLexicalVersion = 4;
constexpr size_t kMaxWordBytes = 64;
constexpr size_t kWordDigestBytes = 16;

// The 16 bytes a word is keyed by: checksum64 (checksum.hpp) of 0x01 then
// the word, native, then of 0x02 then the word. Not a secret: whoever
// guesses a word can compute it.
std::array<unsigned char, kWordDigestBytes> word_digest(std::string_view word);

// Hits best first, ties to the lower id (committed ids ascending, then an
// overlay's new records in the order the batch makes them), cut to the k best:
// the order every search and score returns.
std::vector<LexicalHit> ranked_hits(std::vector<LexicalHit> hits, size_t k);

// The words of a text as the index keys them: runs of ASCII letters and
// digits (lowercased) and of non-ASCII bytes (UTF-8 letters, kept as they
// are), at least 2 bytes long or a single digit, cut at kMaxWordBytes.
// Punctuation and whitespace separate words.
std::vector<std::string> lexical_words(std::string_view text);

// A text's words with their counts, and its length in words. tf is sorted
// by word, each word once: the order a std::map would iterate, without a
// node per word (a deposit reads a few dozen of these per statement).
struct LexicalDoc {
    std::vector<std::pair<std::string, uint32_t>> tf;
    uint32_t length = 0;
    // word's count, or 0 when the text lacks it.
    uint32_t count(std::string_view word) const;
};
LexicalDoc lexical_doc(std::string_view text);
// The distinct words of a text, sorted: what a search asks for (a query's
// repeated word counts once).
std::vector<std::string> query_words(std::string_view text);
// lexical_doc of a text, remembered by the calling thread (shared_doc in
// lexical_index.cpp says why).
std::shared_ptr<const LexicalDoc> shared_doc(std::string_view text);

// The corpus a batch's queries are ranked against: one scope's record and
// word counts as the overlay leaves them, and the overlay's texts as words.
// Made once per batch (LexicalIndex::corpus), read by each query.
struct LexicalCorpus {
    struct Doc {
        std::shared_ptr<const LexicalDoc> doc;
        bool hit = true;
    };
    uint32_t scope = 0;
    bool stored = true;  // false: a scope never used, with no postings
    // The read transaction's snapshot (LMDB txn id) whose word counts may be
    // remembered across calls (posting_counts.hpp); 0: not a read
    // transaction's, nothing remembered.
    uint64_t snapshot = 0;
    bool built = false;  // the index is complete (LexicalIndex::built) on the corpus's snapshot
    double docs = 0, avgdl = 1;
    std::unordered_map<int64_t, Doc> over;                // the overlay's records by id
    std::unordered_map<std::string, double> replaced_df;  // words of the stored texts overlay records replace
    // Per word, the overlay records holding it: counted once per corpus, not
    // once per word looked up (a batch's overlay grows with each item).
    std::unordered_map<std::string, double> over_df;

    // The records of the corpus holding word, of which `stored` are in the
    // stored index: less the stored texts the overlay replaces, plus the
    // overlay's own.
    double records_holding(const std::string& word, size_t stored) const {
        double df = static_cast<double>(stored);
        auto r = replaced_df.find(word);
        if (r != replaced_df.end()) df -= r->second;
        auto o = over_df.find(word);
        if (o != over_df.end()) df += o->second;
        return df;
    }
};

class LexicalIndex {
public:
    // The scope id of a live record (0: the default scope); throws Corrupt
    // when its scope row is damaged (such a record has no postings).
    using ScopeOf = std::function<uint32_t(MDB_txn*, uint64_t)>;

    // Opens the table, created unless read-only. A read-only open of a store
    // from before the index has no table: available() is false, and the
    // index reads as not built. Upkeep reads a record's scope through
    // scope_of, so a record's scope row is written before its words and
    // dropped after them.
    LexicalIndex(Env& env, MDB_dbi meta, MDB_dbi records, bool readonly, ScopeOf scope_of);

    bool available() const { return available_; }
    // The index is complete for this version of the word rules (meta lexical).
    bool built(MDB_txn* txn) const;
    // A new store's index: empty and complete.
    void mark_built(MDB_txn* txn);

    // Upkeep inside the caller's write transaction; nothing until built.
    void add(MDB_txn* txn, uint64_t id, std::string_view text);
    void remove(MDB_txn* txn, uint64_t id, std::string_view text);
    void retext(MDB_txn* txn, uint64_t id, std::string_view before, std::string_view after);

    // Indexes every record from scratch and marks the index built (the
    // caller's write transaction; safe to run again from the start).
    // progress(done, total) every few thousand records.
    void build(MDB_txn* txn, const std::function<void(uint64_t, uint64_t)>& progress);

    // The k best records of the scope (nullopt: a scope never used) for the
    // query, best first, ties to the lower id; keep (if given) filters
    // committed ids. also_scores gets the score of each id in also (0 when
    // no word is shared, or it is of another scope).
    std::vector<LexicalHit> search(MDB_txn* txn, std::optional<uint32_t> scope, std::string_view query, size_t k,
                                   const std::vector<LexicalOverlay>& overlay, const std::vector<int64_t>& also,
                                   std::vector<float>& also_scores,
                                   const std::function<bool(uint64_t)>* keep = nullptr) const;
    // The same against a corpus made once for several queries; read_only:
    // txn is a read transaction, so its word counts may be remembered.
    LexicalCorpus corpus(MDB_txn* txn, std::optional<uint32_t> scope, const std::vector<LexicalOverlay>& overlay,
                         bool read_only = false) const;
    // words: the query's words, each once (query_words). exclude (if
    // given): ids that are never hits, so the k are of the others.
    // least (> 0): hits scoring below it are not wanted; the search may leave
    // such hits out (and then reads less), never one that reaches it.
    // stored (if given): each word's postings in the table on txn's snapshot,
    // as weigh counted them, so they are not counted again.
    std::vector<LexicalHit> search(MDB_txn* txn, const LexicalCorpus& corpus, const std::vector<std::string>& words,
                                   size_t k, const std::vector<int64_t>& also, std::vector<float>& also_scores,
                                   const std::function<bool(uint64_t)>* keep = nullptr,
                                   const std::vector<int64_t>* exclude = nullptr, double least = 0,
                                   const std::vector<size_t>* stored = nullptr) const;

    // The same scores for the given records only, each read from its words
    // (docs: id -> words, the overlay's for its ids) instead of searched for:
    // the same words in the same order, so the same doubles. The k best of
    // hits that score above 0, best first, ties to the lower id; also_scores
    // as search gives them (every also id must be in docs). held (if given):
    // words' record counts known already (weigh's), not looked up again.
    std::vector<LexicalHit> score(MDB_txn* txn, const LexicalCorpus& corpus, const std::vector<std::string>& words,
                                  size_t k, const std::vector<int64_t>& hits,
                                  const std::unordered_map<int64_t, std::shared_ptr<const LexicalDoc>>& docs,
                                  const std::vector<int64_t>& also, std::vector<float>& also_scores,
                                  const WordTable* held = nullptr) const;

    // Each word of the query as the index keys it: (word, its count in the
    // query, the corpus's records holding it, the overlay counted).
    std::vector<std::tuple<std::string, uint32_t, double>> word_counts(MDB_txn* txn, const LexicalCorpus& corpus,
                                                                       std::string_view query) const;
    std::vector<std::tuple<std::string, uint32_t, double>> word_counts(MDB_txn* txn, const LexicalCorpus& corpus,
                                                                       const LexicalDoc& query) const;

    // A deposit's query as lexical_floor weighs it (the reference is
    // weighed_queries in tests/lexical_reference.py,
    // computed alike to the bit): the text's words less those held by more
    // than half of the corpus's records (and more than one), which weigh
    // nothing; and floor times the text's best possible score, its own text
    // as a record of the corpus (a word no record holds counted as held by
    // one), the least score a hit needs.
    struct Weighed {
        std::vector<std::string> words;  // the kept words, each once, sorted
        std::vector<size_t> stored;      // each kept word's postings in the table, for search
        double least = 0;
        double best = 0;  // the text's best possible score
    };
    // held_by (if given) gets each word's record count, for coverage.
    // text: the statement as lexical_doc reads it.
    Weighed weigh(MDB_txn* txn, const LexicalCorpus& corpus, const LexicalDoc& text, double floor,
                  WordTable* held_by = nullptr) const;

    // How much a statement and a record hold of each other (the reference is
    // mutual_coverage in tests/lexical_reference.py):
    // the geometric mean of share (the record's score for the statement's
    // words over the statement's best) and of the statement's score as a
    // record for the record's words over the record's own best, each at most
    // 1; 0 when the record's best is 0. Words are weighed as weigh weighs
    // them: those most of the corpus holds weigh nothing. held: each word's
    // record count in the corpus, as looked up so far (the caller keeps it
    // for one corpus). Any value below need when the coverage is: its
    // exact value is computed only when it reaches need.
    double coverage(MDB_txn* txn, const LexicalCorpus& corpus, const LexicalDoc& statement, const LexicalDoc& record,
                    double share, WordTable& held, double need = 0) const;

    // A write transaction attempt of this handle begins (Env::on_begin).
    void began(uint64_t txn) { counts_.began(txn); }
    // This handle committed write transaction txn (Env::on_commit): the
    // word counts it changed move by what it added and removed.
    void committed(uint64_t txn) { counts_.committed(txn); }

    // I18: the postings are exactly the words of the live records' texts,
    // each with its count and the record's length, under the record's scope,
    // and meta lex_words is their total length. I20: each scope's statistics
    // row holds its live records and their words. Reports through bad.
    void verify(MDB_txn* txn, const std::function<void(std::string)>& bad) const;

private:
    // The postings of word in the corpus's scope, from the remembered
    // counts or else counted with c, which is then at the word's first
    // posting (placed is set); key (if given) gets the posting key when it
    // was computed.
    size_t stored_postings(Cursor& c, const LexicalCorpus& corpus, const std::string& word, std::string* key = nullptr,
                           bool* placed = nullptr) const;
    // The corpus's records holding word, the overlay counted (none stored
    // unless corpus.built); at: a cursor on the postings to reuse.
    double records_holding(Cursor& at, const LexicalCorpus& corpus, const std::string& word) const;
    // Each word of doc (sorted, once) with its count in doc, its postings in
    // the table and the corpus's records holding it: what word_counts reports
    // and weigh weighs.
    struct WordCount {
        const std::string* word;  // doc's own
        uint32_t tf;
        size_t stored;
        double df;
    };
    std::vector<WordCount> counted(MDB_txn* txn, const LexicalCorpus& corpus, const LexicalDoc& doc) const;
    void put_postings(MDB_txn* txn, uint32_t scope, uint64_t id, const LexicalDoc& d);
    void drop_postings(MDB_txn* txn, uint32_t scope, uint64_t id, const LexicalDoc& d);
    uint64_t words_total(MDB_txn* txn) const;
    void set_words_total(MDB_txn* txn, uint64_t n);
    struct ScopeStats {
        uint64_t docs = 0, words = 0;
    };
    ScopeStats scope_stats(MDB_txn* txn, uint32_t scope) const;
    void set_scope_stats(MDB_txn* txn, uint32_t scope, const ScopeStats& s);
    void apply(MDB_txn* txn, uint64_t id, std::string_view text, bool adding);

    MDB_dbi postings_ = 0, meta_ = 0, records_ = 0;
    bool available_ = true;
    ScopeOf scope_of_;
    mutable PostingCounts counts_;
};

}  // namespace agentsensus
