#include "lexical/lexical_index.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "agentsensus/errors.hpp"
#include "format/bytes.hpp"
#include "format/checksum.hpp"
#include "format/schema.hpp"

namespace agentsensus {

namespace {

constexpr double kK1 = 1.2, kB = 0.75;
constexpr size_t kPosting = 16;  // [Be64 record id][u32 tf][u32 record length]

struct Posting {
    uint64_t id = 0;
    uint32_t tf = 0, length = 0;
};

std::array<unsigned char, kPosting> encode_posting(const Posting& p) {
    std::array<unsigned char, kPosting> b{};
    Be64 k(p.id);
    std::memcpy(b.data(), k.b, 8);
    std::memcpy(b.data() + 8, &p.tf, 4);
    std::memcpy(b.data() + 12, &p.length, 4);
    return b;
}

// A posting's key: [Be32 scope][word_digest(word)]. A digest, not the word:
// LMDB may keep a deleted key as a branch page's separator, which compact
// copies, so a key must hold no word a forget takes away. The bare
// [Be32 scope] (4 bytes) keys the scope's statistics row, first of the
// scope's keys.
std::string posting_key(uint32_t scope, std::string_view word) {
    Be32 s(scope);
    std::string k(reinterpret_cast<const char*>(s.b), 4);
    auto d = word_digest(word);
    k.append(reinterpret_cast<const char*>(d.data()), d.size());
    return k;
}

// What the remembered counts key a word by (posting_counts.hpp):
// [Be32 scope][word], so that a count found costs no digest.
std::string counted_key(uint32_t scope, std::string_view word) {
    Be32 s(scope);
    std::string k(reinterpret_cast<const char*>(s.b), 4);
    k.append(word);
    return k;
}

Posting decode_posting(const unsigned char* p) {
    Posting x;
    x.id = read_be64(p);
    std::memcpy(&x.tf, p + 8, 4);
    std::memcpy(&x.length, p + 12, 4);
    return x;
}

bool word_byte(unsigned char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
}

// The order ranked hits take: committed ids ascending, then an overlay's new
// records in the order the batch creates them (as their ids would be).
uint64_t tie_key(int64_t id) { return id > 0 ? static_cast<uint64_t>(id) : (uint64_t(1) << 63) + uint64_t(-id); }

// BM25's idf of a word that df of a scope's docs records hold.
double idf_of(double docs, double df) { return std::log(1 + (docs - df + 0.5) / (df + 0.5)); }

// The order a query's words are scored in (search and score alike, so a
// record's score is summed in one order): rarest first, then by word.
bool scored_before(double idf_a, const std::string& a, double idf_b, const std::string& b) {
    return idf_a > idf_b || (idf_a == idf_b && a < b);
}

double term_weight(double idf, uint32_t tf, uint32_t length, double avgdl) {
    double t = tf;
    return idf * t * (kK1 + 1) / (t + kK1 * (1 - kB + kB * length / avgdl));
}

// A search's accumulators: entries in one dense array, found by id through
// an open-addressed table of their positions. A query of common words
// touches most records, and one allocation per record (a node map) was most
// of the search's time; the passes over every accumulator (the k-th score,
// the drops) read the dense array. A search drops entries only once no
// record can join any more (prune), so a dropped id is never added again.
class Accumulators {
public:
    struct Entry {
        int64_t id = 0;
        double score = 0;
        bool hit = false;     // may be returned (kept, not an overlay record of another scope)
        bool pinned = false;  // an also id or an overlay record: never dropped
    };

    Accumulators() : table_(64, kEmpty) {}

    // id's entry, or nullptr.
    Entry* find(int64_t id) {
        uint32_t at = table_[slot(id)];
        return at == kEmpty ? nullptr : &entries_[at];
    }
    // id's entry, added as e unless there.
    Entry& emplace(const Entry& e) {
        size_t i = slot(e.id);
        if (table_[i] != kEmpty) return entries_[table_[i]];
        if (2 * (entries_.size() + 1) > table_.size()) {
            index(2 * table_.size());
            i = slot(e.id);
        }
        table_[i] = static_cast<uint32_t>(entries_.size());
        entries_.push_back(e);
        return entries_.back();
    }
    // Keeps the entries drop() is false for.
    template <class F> void prune(F&& drop) {
        size_t before = entries_.size();
        entries_.erase(std::remove_if(entries_.begin(), entries_.end(), drop), entries_.end());
        if (entries_.size() == before) return;
        size_t n = 64;
        while (n < 2 * entries_.size()) n *= 2;
        index(n);
    }
    std::vector<Entry>& entries() { return entries_; }
    size_t size() const { return entries_.size(); }

private:
    static constexpr uint32_t kEmpty = UINT32_MAX;
    // The table position of id, or the empty one where it would go.
    size_t slot(int64_t id) const {
        const size_t mask = table_.size() - 1;
        size_t i = static_cast<size_t>((static_cast<uint64_t>(id) * 0x9E3779B97F4A7C15ull) >> 20) & mask;
        while (table_[i] != kEmpty && entries_[table_[i]].id != id) i = (i + 1) & mask;
        return i;
    }
    void index(size_t n) {  // n: a power of two, more than twice the entries
        table_.assign(n, kEmpty);
        for (size_t e = 0; e < entries_.size(); ++e) table_[slot(entries_[e].id)] = static_cast<uint32_t>(e);
    }
    std::vector<Entry> entries_;
    std::vector<uint32_t> table_;  // a power of two, at most half used
};

}  // namespace

std::vector<LexicalHit> ranked_hits(std::vector<LexicalHit> hits, size_t k) {
    auto better = [](const LexicalHit& a, const LexicalHit& b) {
        return a.score > b.score || (a.score == b.score && tie_key(a.id) < tie_key(b.id));
    };
    const size_t top = std::min(k, hits.size());
    std::partial_sort(hits.begin(), hits.begin() + top, hits.end(), better);
    hits.resize(top);
    return hits;
}

std::array<unsigned char, kWordDigestBytes> word_digest(std::string_view word) {
    // Two 64-bit checksums of the word, each behind its own lead byte. An
    // indexed word fits the stack buffer (kMaxWordBytes): no allocation.
    unsigned char small[1 + kMaxWordBytes];
    std::vector<unsigned char> big;
    unsigned char* b = small;
    if (word.size() > kMaxWordBytes) {
        big.resize(1 + word.size());
        b = big.data();
    }
    std::memcpy(b + 1, word.data(), word.size());
    std::array<unsigned char, kWordDigestBytes> out{};
    for (int half = 0; half < 2; ++half) {
        b[0] = static_cast<unsigned char>(1 + half);
        uint64_t h = checksum64(b, 1 + word.size());
        std::memcpy(out.data() + 8 * half, &h, 8);
    }
    return out;
}

namespace {
// The words of text as lexical_words cuts them, as views into lowered (the
// text with ASCII letters lowercased), so that no word is copied before it
// is known to be new.
std::vector<std::string_view> word_views(std::string_view text, std::string& lowered) {
    lowered.assign(text);
    for (char& c : lowered)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    std::vector<std::string_view> out;
    size_t i = 0, n = lowered.size();
    while (i < n) {
        while (i < n && !word_byte(static_cast<unsigned char>(lowered[i]))) ++i;
        size_t start = i;
        while (i < n && word_byte(static_cast<unsigned char>(lowered[i]))) ++i;
        // One letter is a pronoun or an article ("I", "a"); one digit is a
        // number (a day, a scene, a count), which tells statements apart.
        if (i - start < 2 && !(i - start == 1 && lowered[start] >= '0' && lowered[start] <= '9')) continue;
        out.emplace_back(lowered.data() + start, std::min(i - start, kMaxWordBytes));
    }
    return out;
}
}  // namespace

std::vector<std::string> lexical_words(std::string_view text) {
    std::string lowered;
    std::vector<std::string> out;
    for (std::string_view w : word_views(text, lowered)) out.emplace_back(w);
    return out;
}

LexicalDoc lexical_doc(std::string_view text) {
    // Sorted as views (std::string orders by the same byte comparison), each
    // distinct word copied once: a deposit reads a few dozen texts per
    // statement, and sorting owned strings was most of each read.
    std::string lowered;
    std::vector<std::string_view> words = word_views(text, lowered);
    LexicalDoc d;
    d.length = static_cast<uint32_t>(words.size());
    std::sort(words.begin(), words.end());
    d.tf.reserve(words.size());
    for (size_t i = 0; i < words.size();) {
        size_t j = i + 1;
        while (j < words.size() && words[j] == words[i]) ++j;
        d.tf.emplace_back(std::string(words[i]), static_cast<uint32_t>(j - i));
        i = j;
    }
    return d;
}

std::vector<std::string> query_words(std::string_view text) {
    LexicalDoc d = lexical_doc(text);
    std::vector<std::string> out;
    out.reserve(d.tf.size());
    for (auto& [word, tf] : d.tf) out.push_back(std::move(word));
    return out;
}

uint32_t LexicalDoc::count(std::string_view word) const {
    auto it =
        std::lower_bound(tf.begin(), tf.end(), word,
                         [](const std::pair<std::string, uint32_t>& e, std::string_view w) { return e.first < w; });
    return it != tf.end() && it->first == word ? it->second : 0;
}

// A batch's deposits pass the texts it has staged so far with each of its
// lexical calls (the overlay), so each call tokenized every one again and a
// batch of n items did n^2/2 of them. A text's words never change, so each
// thread keeps the documents of the texts it has met, bounded by their
// bytes and dropped whole when full (no lock: one table per thread).
std::shared_ptr<const LexicalDoc> shared_doc(std::string_view text) {
    constexpr size_t kKeptBytes = size_t{8} << 20;
    thread_local std::unordered_map<std::string, std::shared_ptr<const LexicalDoc>> docs;
    thread_local size_t bytes = 0;
    std::string key(text);
    auto it = docs.find(key);
    if (it != docs.end()) return it->second;
    if (bytes + key.size() > kKeptBytes) {
        docs.clear();
        bytes = 0;
    }
    auto d = std::make_shared<const LexicalDoc>(lexical_doc(text));
    bytes += key.size();
    docs.emplace(std::move(key), d);
    return d;
}

LexicalIndex::LexicalIndex(Env& env, MDB_dbi meta, MDB_dbi records, bool readonly, ScopeOf scope_of)
    : meta_(meta), records_(records), scope_of_(std::move(scope_of)) {
    try {
        postings_ = env.open_db(kLexicalTable.name, kLexicalTable.flags);
    } catch (const Corrupt&) {
        if (!readonly) throw;
        available_ = false;  // an older store, read only: no index to read
    }
}

bool LexicalIndex::built(MDB_txn* txn) const {
    if (!available_) return false;
    MDB_val v;
    if (!agentsensus::get(txn, meta_, meta_key(kMetaLexical), v)) return false;
    return v.mv_size == 8 && load<uint64_t>(v.mv_data) == kLexicalVersion;
}

void LexicalIndex::mark_built(MDB_txn* txn) {
    uint64_t version = kLexicalVersion;
    put(txn, meta_, meta_key(kMetaLexical), val(&version, 8));
    set_words_total(txn, words_total(txn));
}

uint64_t LexicalIndex::words_total(MDB_txn* txn) const {
    MDB_val v;
    if (!agentsensus::get(txn, meta_, meta_key(kMetaLexWords), v) || v.mv_size != 8) return 0;
    return load<uint64_t>(v.mv_data);
}

void LexicalIndex::set_words_total(MDB_txn* txn, uint64_t n) { put(txn, meta_, meta_key(kMetaLexWords), val(&n, 8)); }

LexicalIndex::ScopeStats LexicalIndex::scope_stats(MDB_txn* txn, uint32_t scope) const {
    Be32 k(scope);
    MDB_val v;
    ScopeStats st;
    if (!agentsensus::get(txn, postings_, val(k.b, 4), v) || v.mv_size != kPosting) return st;
    std::memcpy(&st.docs, v.mv_data, 8);
    std::memcpy(&st.words, static_cast<const char*>(v.mv_data) + 8, 8);
    return st;
}

void LexicalIndex::set_scope_stats(MDB_txn* txn, uint32_t scope, const ScopeStats& st) {
    Be32 k(scope);
    del(txn, postings_, val(k.b, 4));  // the one row, whatever it held
    if (st.docs == 0 && st.words == 0) return;
    unsigned char b[kPosting];
    std::memcpy(b, &st.docs, 8);
    std::memcpy(b + 8, &st.words, 8);
    put(txn, postings_, val(k.b, 4), val(b, kPosting));
}

void LexicalIndex::put_postings(MDB_txn* txn, uint32_t scope, uint64_t id, const LexicalDoc& d) {
    const uint64_t writing = mdb_txn_id(txn);
    for (const auto& [w, tf] : d.tf) {
        auto p = encode_posting(Posting{id, tf, d.length});
        // NODUPDATA: the same posting again adds nothing, and says so, so the
        // count's move is exact.
        const bool added = put(txn, postings_, val(posting_key(scope, w)), val(p.data(), p.size()), MDB_NODUPDATA);
        counts_.moved(writing, counted_key(scope, w), added ? 1 : 0);
    }
}

// Finds each word's posting of the record by its id prefix, so a posting of
// another count or length (damage) goes too.
void LexicalIndex::drop_postings(MDB_txn* txn, uint32_t scope, uint64_t id, const LexicalDoc& d) {
    Cursor c(txn, postings_);
    const uint64_t writing = mdb_txn_id(txn);
    for (const auto& [w, tf] : d.tf) {
        auto probe = encode_posting(Posting{id, 0, 0});
        const std::string key = posting_key(scope, w);
        MDB_val k = val(key), v = val(probe.data(), probe.size());
        if (!c.op(k, v, MDB_GET_BOTH_RANGE)) continue;
        if (v.mv_size != kPosting || read_be64(v.mv_data) != id) continue;
        int rc = mdb_cursor_del(c.get(), 0);
        if (rc) throw_lmdb(rc, "mdb_cursor_del");
        counts_.moved(writing, counted_key(scope, w), -1);
    }
}

void LexicalIndex::apply(MDB_txn* txn, uint64_t id, std::string_view text, bool adding) {
    const uint32_t scope = scope_of_(txn, id);
    LexicalDoc d = lexical_doc(text);
    ScopeStats st = scope_stats(txn, scope);
    uint64_t total = words_total(txn);
    if (adding) {
        put_postings(txn, scope, id, d);
        st.docs += 1;
        st.words += d.length;
        total += d.length;
    } else {
        drop_postings(txn, scope, id, d);
        st.docs = st.docs > 0 ? st.docs - 1 : 0;
        st.words = st.words >= d.length ? st.words - d.length : 0;
        total = total >= d.length ? total - d.length : 0;
    }
    set_scope_stats(txn, scope, st);
    set_words_total(txn, total);
}

void LexicalIndex::add(MDB_txn* txn, uint64_t id, std::string_view text) {
    if (built(txn)) apply(txn, id, text, true);
}

void LexicalIndex::remove(MDB_txn* txn, uint64_t id, std::string_view text) {
    if (built(txn)) apply(txn, id, text, false);
}

void LexicalIndex::retext(MDB_txn* txn, uint64_t id, std::string_view before, std::string_view after) {
    if (before == after || !built(txn)) return;
    remove(txn, id, before);
    add(txn, id, after);
}

void LexicalIndex::build(MDB_txn* txn, const std::function<void(uint64_t, uint64_t)>& progress) {
    counts_.changing_all(mdb_txn_id(txn));
    int rc = mdb_drop(txn, postings_, 0);
    if (rc) throw_lmdb(rc, "mdb_drop");
    const uint64_t total = entries(txn, records_);
    uint64_t done = 0, words = 0;
    std::map<uint32_t, ScopeStats> stats;
    Cursor c(txn, records_);
    MDB_val k, v;
    for (bool more = c.op(k, v, MDB_FIRST); more; more = c.op(k, v, MDB_NEXT)) {
        RecordHeader h;
        std::string_view text;
        // A damaged record, or one whose scope row is damaged, is verify's
        // and repair's to report; it has no words here.
        if (k.mv_size == 8 && decode_record(v, h, text)) {
            const uint64_t id = read_be64(k.mv_data);
            std::optional<uint32_t> scope;
            try {
                scope = scope_of_(txn, id);
            } catch (const Corrupt&) {
            }
            if (scope) {
                LexicalDoc d = lexical_doc(text);
                put_postings(txn, *scope, id, d);
                words += d.length;
                stats[*scope].docs += 1;
                stats[*scope].words += d.length;
            }
        }
        if (++done % 4096 == 0 && progress) progress(done, total);
    }
    for (const auto& [scope, st] : stats) set_scope_stats(txn, scope, st);
    if (progress) progress(done, total);
    uint64_t version = kLexicalVersion;
    put(txn, meta_, meta_key(kMetaLexical), val(&version, 8));
    set_words_total(txn, words);
}

LexicalCorpus LexicalIndex::corpus(MDB_txn* txn, std::optional<uint32_t> scope,
                                   const std::vector<LexicalOverlay>& overlay, bool read_only) const {
    // The scope's corpus as the overlay leaves it: its new records join, and
    // its committed records are scored by their overlay text, not the stored
    // one. Records of other scopes, stored or new, are not of it.
    LexicalCorpus c;
    c.scope = scope.value_or(0);
    c.stored = scope.has_value();
    if (read_only) c.snapshot = mdb_txn_id(txn);
    c.built = built(txn);
    double words = 0;
    if (c.stored) {
        ScopeStats st = scope_stats(txn, c.scope);
        c.docs = static_cast<double>(st.docs);
        words = static_cast<double>(st.words);
    }
    for (const LexicalOverlay& o : overlay) {
        if (c.over.count(o.id)) continue;
        if (o.id < 0 && !o.hit) continue;  // a new record of another scope
        if (o.id > 0 && (!c.stored || scope_of_(txn, static_cast<uint64_t>(o.id)) != c.scope)) continue;
        std::shared_ptr<const LexicalDoc> d = shared_doc(o.text);
        if (o.id < 0) {
            c.docs += 1;
            words += d->length;
        } else {
            Be64 key(static_cast<uint64_t>(o.id));
            MDB_val rv;
            RecordHeader h;
            std::string_view text;
            if (!agentsensus::get(txn, records_, val(key.b, 8), rv) || !decode_record(rv, h, text)) continue;
            std::shared_ptr<const LexicalDoc> old = shared_doc(text);
            words += static_cast<double>(d->length) - old->length;
            for (const auto& [w, tf] : old->tf) c.replaced_df[w] += 1;
        }
        c.over.emplace(o.id, LexicalCorpus::Doc{std::move(d), o.hit});
    }
    for (const auto& [id, d] : c.over)
        for (const auto& [w, tf] : d.doc->tf) c.over_df[w] += 1;
    c.avgdl = c.docs > 0 && words > 0 ? words / c.docs : 1.0;
    return c;
}

size_t LexicalIndex::stored_postings(Cursor& c, const LexicalCorpus& cp, const std::string& word, std::string* key,
                                     bool* placed) const {
    if (placed) *placed = false;
    if (!cp.stored) return 0;
    const std::string counted = cp.snapshot ? counted_key(cp.scope, word) : std::string();
    if (cp.snapshot)
        if (std::optional<size_t> known = counts_.find(cp.snapshot, counted)) return *known;
    std::string own;
    std::string& at = key ? *key : own;
    if (at.empty()) at = posting_key(cp.scope, word);
    size_t stored = 0;
    MDB_val k = val(at), v;
    if (c.op(k, v, MDB_SET)) {
        int rc = mdb_cursor_count(c.get(), &stored);
        if (rc) throw_lmdb(rc, "mdb_cursor_count");
        if (placed) *placed = true;
    }
    if (cp.snapshot) counts_.remember(cp.snapshot, counted, stored);
    return stored;
}

double LexicalIndex::records_holding(Cursor& c, const LexicalCorpus& cp, const std::string& word) const {
    // as search counts a word's records
    const size_t stored = cp.built ? stored_postings(c, cp, word) : 0;
    return cp.records_holding(word, stored);
}

std::vector<std::tuple<std::string, uint32_t, double>> LexicalIndex::word_counts(MDB_txn* txn, const LexicalCorpus& cp,
                                                                                 std::string_view query) const {
    return word_counts(txn, cp, lexical_doc(query));
}

std::vector<LexicalIndex::WordCount> LexicalIndex::counted(MDB_txn* txn, const LexicalCorpus& cp,
                                                           const LexicalDoc& doc) const {
    std::vector<WordCount> out;
    Cursor at(txn, postings_);
    for (const auto& [word, tf] : doc.tf) {
        const size_t stored = cp.built ? stored_postings(at, cp, word) : 0;  // as records_holding counts
        out.push_back(WordCount{&word, tf, stored, cp.records_holding(word, stored)});
    }
    return out;
}

std::vector<std::tuple<std::string, uint32_t, double>> LexicalIndex::word_counts(MDB_txn* txn, const LexicalCorpus& cp,
                                                                                 const LexicalDoc& q) const {
    std::vector<std::tuple<std::string, uint32_t, double>> out;
    for (const WordCount& w : counted(txn, cp, q)) out.emplace_back(*w.word, w.tf, w.df);
    return out;
}

double LexicalIndex::coverage(MDB_txn* txn, const LexicalCorpus& cp, const LexicalDoc& statement,
                              const LexicalDoc& record, double share, WordTable& held_by, double need) const {
    share = std::min(share, 1.0);
    if (share <= 0) return 0;
    auto weight = [&](double df) {
        if (df > 1 && df > cp.docs / 2)
            return 0.0;  // more than half of the scope's records (and more than one) hold it
        return idf_of(cp.docs, std::max(df, 1.0));
    };
    // The shared words first (their counts are known from weighing the
    // statement); then the record's own words, each only adding to its
    // best: once that is so large that the coverage is below need, the
    // words left need not be looked up.
    double own = 0, theirs = 0;
    std::vector<std::pair<const std::string*, uint32_t>> unknown;
    // Both word lists are sorted: the statement's count of each record word
    // is found by walking it alongside.
    auto said = statement.tf.begin();
    auto said_count = [&](const std::string& word) -> uint32_t {
        while (said != statement.tf.end() && said->first < word) ++said;
        return said != statement.tf.end() && said->first == word ? said->second : 0;
    };
    for (const auto& [word, tf] : record.tf) {
        const double* known = held_by.find(word);
        if (!known) {
            unknown.emplace_back(&word, tf);
            continue;
        }
        const double idf = weight(*known);
        if (idf <= 0) continue;
        own += term_weight(idf, tf, record.length, cp.avgdl);
        if (uint32_t s = said_count(word)) theirs += term_weight(idf, s, statement.length, cp.avgdl);
    }
    // below need once own > theirs * share / need^2
    const double most = need > 0 ? theirs * share / (need * need) : std::numeric_limits<double>::infinity();
    if (unknown.empty()) return own <= 0 ? 0 : std::sqrt(share * std::min(theirs / own, 1.0));
    Cursor at(txn, postings_);
    for (const auto& [word, tf] : unknown) {
        if (own > most) return 0;
        const double df = records_holding(at, cp, *word);
        held_by.emplace(*word, df);
        const double idf = weight(df);
        if (idf > 0) own += term_weight(idf, tf, record.length, cp.avgdl);  // a word the statement lacks
    }
    if (own <= 0) return 0;
    return std::sqrt(share * std::min(theirs / own, 1.0));
}

LexicalIndex::Weighed LexicalIndex::weigh(MDB_txn* txn, const LexicalCorpus& cp, const LexicalDoc& text, double floor,
                                          WordTable* held_by) const {
    // Every operation in weighed_queries' order, so the floors are the same doubles.
    const std::vector<WordCount> words = counted(txn, cp, text);
    if (held_by)
        for (const WordCount& w : words) held_by->emplace(*w.word, w.df);
    double length = 0;
    for (const WordCount& w : words) length += w.tf;
    Weighed out;
    double best = 0;
    for (const WordCount& w : words) {
        if (w.df > 1 && w.df > cp.docs / 2) continue;  // more than half of the scope's records hold it: no weight
        const double held = std::max(w.df, 1.0);       // a word no record holds: as the one that would hold it
        const double idf = idf_of(cp.docs, held);
        const double t = w.tf;
        best += idf * t * (kK1 + 1) / (t + kK1 * (1 - kB + kB * length / cp.avgdl));
        out.words.push_back(*w.word);
        out.stored.push_back(w.stored);
    }
    out.least = floor * best;
    out.best = best;
    return out;
}

std::vector<LexicalHit> LexicalIndex::search(MDB_txn* txn, std::optional<uint32_t> scope, std::string_view query,
                                             size_t k, const std::vector<LexicalOverlay>& overlay,
                                             const std::vector<int64_t>& also, std::vector<float>& also_scores,
                                             const std::function<bool(uint64_t)>* keep) const {
    return search(txn, corpus(txn, scope, overlay), query_words(query), k, also, also_scores, keep);
}

// Exact BM25 top k, term at a time, rarest word first, with max-score
// pruning (Turtle and Flood 1995): once the k-th best score so far exceeds
// the most that all the words left could add, no record outside the
// accumulators can still reach the top k, so the words left (the frequent
// ones: "told", "said", a witness's name) are looked up for the
// accumulated records only instead of read in full, and accumulators that
// cannot reach the k-th score are dropped. A least score (a deposit's
// lexical floor) closes the search the same way before k are known. A word
// read in full before then admits a record only if it can still pass the k
// best seen so far: a word most records hold adds its weight to the
// accumulated records without one accumulator per posting. Every record's
// score is summed in the same word order whichever way it was read, so the
// result is that of scoring every record (tests/test_lexical_search.py
// checks it against a reference).
std::vector<LexicalHit> LexicalIndex::search(MDB_txn* txn, const LexicalCorpus& cp,
                                             const std::vector<std::string>& words, size_t k,
                                             const std::vector<int64_t>& also, std::vector<float>& also_scores,
                                             const std::function<bool(uint64_t)>* keep,
                                             const std::vector<int64_t>* exclude, double least,
                                             const std::vector<size_t>* stored) const {
    also_scores.assign(also.size(), 0.f);
    if (!cp.built || cp.docs <= 0) return {};
    struct Term {
        std::string word, key;  // key: posting_key(scope, word)
        size_t stored = 0;      // postings in the table
        double idf = 0, bound = 0;
        // At the word's first posting when placed: counting its postings
        // placed it there, and reading them starts from it without a second
        // descent of the table. A remembered count placed it nowhere, and
        // the word is read through the shared cursor (opening a cursor per
        // word was a tenth of a deposit's lexical call).
        std::unique_ptr<Cursor> at;
        bool placed = false;
    };
    std::vector<Term> terms;
    Cursor shared(txn, postings_);
    {
        std::unique_ptr<Cursor> spare;
        for (size_t w = 0; w < words.size(); ++w) {
            Term t;
            t.word = words[w];
            if (stored && cp.stored) {
                t.stored = (*stored)[w];  // read through the shared cursor, as a remembered count is
            } else {
                if (!spare) spare = std::make_unique<Cursor>(txn, postings_);
                t.stored = stored_postings(*spare, cp, t.word, &t.key, &t.placed);
                if (t.placed) t.at = std::move(spare);
            }
            const double df = cp.records_holding(t.word, t.stored);
            if (df <= 0) continue;
            if (t.key.empty()) t.key = posting_key(cp.scope, t.word);
            t.idf = idf_of(cp.docs, df);
            // term_weight < idf * (k1 + 1) for every count and length; the
            // margin covers the rounding of the sums compared with it.
            t.bound = t.idf * (kK1 + 1) * (1 + 1e-9);
            terms.push_back(std::move(t));
        }
    }
    std::sort(terms.begin(), terms.end(),
              [](const Term& a, const Term& b) { return scored_before(a.idf, a.word, b.idf, b.word); });
    std::vector<double> rest(terms.size() + 1, 0.0);  // rest[j]: the most words j.. can add
    for (size_t j = terms.size(); j-- > 0;) rest[j] = rest[j + 1] + terms[j].bound;

    using Acc = Accumulators::Entry;
    Accumulators acc;
    std::unordered_set<int64_t> excluded;
    if (exclude) excluded.insert(exclude->begin(), exclude->end());
    const bool overlay = !cp.over.empty();
    auto eligible = [&](int64_t id) {
        if (!excluded.empty() && excluded.count(id)) return false;
        if (overlay) {
            auto o = cp.over.find(id);
            if (o != cp.over.end()) return o->second.hit && (id < 0 || !keep || (*keep)(static_cast<uint64_t>(id)));
        }
        return !keep || (*keep)(static_cast<uint64_t>(id));
    };
    for (int64_t id : also) acc.emplace(Acc{id, 0, eligible(id), true});
    for (const auto& [id, d] : cp.over) acc.emplace(Acc{id, 0, eligible(id), true});

    // The k best eligible scores so far, the k-th on top (a heap by score):
    // best.front() is the k-th best once k are known. One pass per word gives
    // both the k-th score and the k records a word read in full starts from;
    // a bounded heap, not a copy of every accumulator to select from, since
    // most accumulators rank below the k-th and cost one comparison.
    struct Scored {
        double score;
        uint64_t tie;
    };
    auto kth_on_top = [](const Scored& a, const Scored& b) { return a.score > b.score; };
    std::vector<Scored> best;
    best.reserve(k);
    auto rank_best = [&]() {
        best.clear();
        if (k == 0) return;  // k == 0: only the also scores are asked for
        for (const Acc& a : acc.entries()) {
            if (!a.hit || !(a.score > 0)) continue;
            if (best.size() < k) {
                best.push_back(Scored{a.score, tie_key(a.id)});
                std::push_heap(best.begin(), best.end(), kth_on_top);
            } else if (a.score > best.front().score) {
                std::pop_heap(best.begin(), best.end(), kth_on_top);
                best.back() = Scored{a.score, tie_key(a.id)};
                std::push_heap(best.begin(), best.end(), kth_on_top);
            }
        }
    };
    // A score this far below the k-th cannot reach it, even after both are
    // rounded to float for the ranking (ties there go to the lower id).
    constexpr double kBelow = 1 - 1e-6;
    // Below this no hit is wanted (a hit scoring at least `least` is above it
    // in double, whatever the float rounding).
    const double wanted = least > 0 ? least * kBelow : 0;

    // The k best eligible records seen while a word is read in full, by their
    // score so far rounded as the ranking rounds it, worst on top: each one's
    // final score is at least that, so a record that ranks below the worst of
    // k of them can never be in the top k.
    struct Seen {
        float score;
        uint64_t tie;
    };
    auto worse = [](const Seen& a, const Seen& b) {
        return a.score < b.score || (a.score == b.score && a.tie > b.tie);
    };
    auto heap_order = [&](const Seen& a, const Seen& b) { return worse(b, a); };  // worst first
    std::vector<Seen> seen;

    bool closed = k == 0;  // no record outside acc can reach the top k any more
    for (size_t j = 0; j < terms.size(); ++j) {
        const Term& t = terms[j];
        // The k-th score so far, once per word (nothing moves it in between).
        rank_best();
        const double kth_now =
            k > 0 && best.size() >= k ? best.front().score : std::numeric_limits<double>::quiet_NaN();
        if (!closed) {
            // Closed once the words left cannot lift a record from nothing
            // to the k-th score so far, or to the least wanted one.
            closed = rest[j] < wanted || (!std::isnan(kth_now) && rest[j] < kth_now * kBelow);
        }
        if (closed) {
            const double theta = std::isnan(kth_now) ? wanted : std::max(kth_now * kBelow, wanted);
            acc.prune([&](const Acc& a) { return !a.pinned && a.score + rest[j] < theta; });
        }
        if (t.stored > 0) {
            size_t committed = acc.size() - cp.over.size();  // at most, the accumulated committed records
            if (closed && committed * 8 < t.stored) {
                // Few accumulators against a long posting list: find each one's posting by id.
                for (Acc& a : acc.entries()) {
                    if (a.id < 0 || (overlay && cp.over.count(a.id))) continue;
                    auto probe = encode_posting(Posting{static_cast<uint64_t>(a.id), 0, 0});
                    MDB_val key = val(t.key), v = val(probe.data(), probe.size());
                    if (!(t.at ? *t.at : shared).op(key, v, MDB_GET_BOTH_RANGE) || v.mv_size != kPosting) continue;
                    Posting x = decode_posting(static_cast<const unsigned char*>(v.mv_data));
                    if (x.id == static_cast<uint64_t>(a.id)) a.score += term_weight(t.idf, x.tf, x.length, cp.avgdl);
                }
            } else {
                const bool last = j + 1 == terms.size();
                seen.clear();
                if (!closed) {
                    // Any k of them bound the rest soundly; these are the k
                    // best in double, which rounding to float can only tie.
                    for (const Scored& b : best) seen.push_back(Seen{static_cast<float>(b.score), b.tie});
                    std::make_heap(seen.begin(), seen.end(), heap_order);
                }
                // Whether a record first met here, with weight w, can reach
                // the top k: not if it ranks below the worst of k seen, from
                // here on (its score is w and theirs only grow) or at most by
                // the words left, nor if it cannot reach the least wanted.
                auto may_reach = [&](int64_t id, double w) {
                    const double most = w + rest[j + 1];
                    if (most < wanted) return false;
                    if (seen.size() < k) return true;
                    return !(last ? worse(Seen{static_cast<float>(w), tie_key(id)}, seen.front())
                                  : most < static_cast<double>(seen.front().score) * kBelow);
                };
                auto admit = [&](int64_t id, double w) {
                    if (seen.size() == k) {
                        std::pop_heap(seen.begin(), seen.end(), heap_order);
                        seen.back() = Seen{static_cast<float>(w), tie_key(id)};
                    } else {
                        seen.push_back(Seen{static_cast<float>(w), tie_key(id)});
                    }
                    std::push_heap(seen.begin(), seen.end(), heap_order);
                    acc.emplace(Acc{id, w, true, false});
                };
                // GET_CURRENT first: a word of one posting has no duplicates
                // page, and GET_MULTIPLE then leaves v as it was.
                Cursor& c = t.at ? *t.at : shared;
                MDB_val key = val(t.key), v;
                bool more = (t.placed || c.op(key, v, MDB_SET)) && c.op(key, v, MDB_GET_CURRENT) &&
                            c.op(key, v, MDB_GET_MULTIPLE);
                while (more) {
                    const unsigned char* p = static_cast<const unsigned char*>(v.mv_data);
                    for (size_t at = 0; at + kPosting <= v.mv_size; at += kPosting) {
                        Posting x = decode_posting(p + at);
                        int64_t id = static_cast<int64_t>(x.id);
                        if (overlay && cp.over.count(id)) continue;  // scored by its overlay text below
                        double w = term_weight(t.idf, x.tf, x.length, cp.avgdl);
                        if (Acc* a = acc.find(id)) {
                            a->score += w;
                        } else if (!closed && may_reach(id, w) && eligible(id)) {
                            admit(id, w);  // a record no keep admits is never a hit
                        }
                    }
                    more = c.op(key, v, MDB_NEXT_MULTIPLE);
                }
            }
        }
        for (const auto& [id, d] : cp.over) {
            if (uint32_t tf = d.doc->count(t.word))
                acc.find(id)->score += term_weight(t.idf, tf, d.doc->length, cp.avgdl);
        }
    }
    for (size_t i = 0; i < also.size(); ++i)
        if (Acc* a = acc.find(also[i])) also_scores[i] = static_cast<float>(a->score);
    std::vector<LexicalHit> hits;
    hits.reserve(acc.size());
    for (const Acc& a : acc.entries())
        if (a.hit && a.score > 0) hits.push_back(LexicalHit{a.id, static_cast<float>(a.score)});
    return ranked_hits(std::move(hits), k);
}

std::vector<LexicalHit> LexicalIndex::score(MDB_txn* txn, const LexicalCorpus& cp,
                                            const std::vector<std::string>& words, size_t k,
                                            const std::vector<int64_t>& hits,
                                            const std::unordered_map<int64_t, std::shared_ptr<const LexicalDoc>>& docs,
                                            const std::vector<int64_t>& also, std::vector<float>& also_scores,
                                            const WordTable* held) const {
    also_scores.assign(also.size(), 0.f);
    if (!cp.built || cp.docs <= 0) return {};
    // The words as search orders them (rarest first, then by word), so each
    // record's score is summed in the same order.
    std::vector<std::pair<std::string, double>> terms;  // word, idf
    {
        Cursor at(txn, postings_);
        for (const std::string& word : words) {
            double df = -1;
            if (held)
                if (const double* known = held->find(word)) df = *known;
            if (df < 0) df = records_holding(at, cp, word);
            if (df <= 0) continue;
            terms.emplace_back(word, idf_of(cp.docs, df));
        }
    }
    std::sort(terms.begin(), terms.end(),
              [](const auto& a, const auto& b) { return scored_before(a.second, a.first, b.second, b.first); });
    auto score_of = [&](int64_t id) {
        auto d = docs.find(id);
        if (d == docs.end()) return 0.0;
        double s = 0;
        for (const auto& [word, idf] : terms)
            if (uint32_t tf = d->second->count(word)) s += term_weight(idf, tf, d->second->length, cp.avgdl);
        return s;
    };
    for (size_t i = 0; i < also.size(); ++i) also_scores[i] = static_cast<float>(score_of(also[i]));
    std::vector<LexicalHit> out;
    for (int64_t id : hits)
        if (const double s = score_of(id); s > 0) out.push_back(LexicalHit{id, static_cast<float>(s)});
    return ranked_hits(std::move(out), k);
}

void LexicalIndex::verify(MDB_txn* txn, const std::function<void(std::string)>& bad) const {
    if (!built(txn)) {
        // A store from before the index, not yet opened writable: nothing to check.
        MDB_val v;
        if (available_ && agentsensus::get(txn, meta_, meta_key(kMetaLexical), v))
            bad("the lexical index is of another version (the next writable open rebuilds it)");
        return;
    }
    uint64_t expected = 0, words = 0;
    size_t missing = 0;
    std::map<uint64_t, uint32_t> live;  // record id -> scope
    std::map<uint32_t, ScopeStats> stats;
    {
        Cursor rc(txn, records_), pc(txn, postings_);
        MDB_val k, v;
        for (bool more = rc.op(k, v, MDB_FIRST); more; more = rc.op(k, v, MDB_NEXT)) {
            RecordHeader h;
            std::string_view text;
            if (k.mv_size != 8 || !decode_record(v, h, text)) continue;  // I3 reports it
            uint64_t id = read_be64(k.mv_data);
            uint32_t scope = 0;
            try {
                scope = scope_of_(txn, id);
            } catch (const Corrupt&) {
                continue;  // I14 reports it; such a record has no postings
            }
            live[id] = scope;
            LexicalDoc d = lexical_doc(text);
            words += d.length;
            stats[scope].docs += 1;
            stats[scope].words += d.length;
            for (const auto& [w, tf] : d.tf) {
                ++expected;
                auto p = encode_posting(Posting{id, tf, d.length});
                const std::string key = posting_key(scope, w);
                MDB_val pk = val(key), pv = val(p.data(), p.size());
                if (!pc.op(pk, pv, MDB_GET_BOTH) && missing++ < 5)
                    bad("record " + std::to_string(id) + " lacks its lexical posting for '" + w + "'");
            }
        }
    }
    if (missing > 5) bad("the lexical index lacks " + std::to_string(missing) + " postings in all");
    size_t stray = 0;
    uint64_t held = 0;
    std::set<uint32_t> counted;  // scopes with a sound statistics row
    {
        Cursor c(txn, postings_);
        MDB_val k, v;
        for (bool more = c.op(k, v, MDB_FIRST); more; more = c.op(k, v, MDB_NEXT)) {
            if (k.mv_size == 4) {  // I20: a scope's statistics row
                const uint32_t scope = read_be32(k.mv_data);
                ScopeStats want;
                auto e = stats.find(scope);
                if (e != stats.end()) want = e->second;
                ScopeStats got;
                if (v.mv_size == kPosting) {
                    std::memcpy(&got.docs, v.mv_data, 8);
                    std::memcpy(&got.words, static_cast<const char*>(v.mv_data) + 8, 8);
                }
                if (v.mv_size != kPosting || got.docs != want.docs || got.words != want.words || counted.count(scope))
                    bad("the lexical statistics of scope " + std::to_string(scope) + " (" + std::to_string(got.docs) +
                        " records, " + std::to_string(got.words) + " words) disagree with its records (" +
                        std::to_string(want.docs) + ", " + std::to_string(want.words) + ")");
                counted.insert(scope);
                continue;
            }
            ++held;
            bool ok = v.mv_size == kPosting && k.mv_size == 4 + kWordDigestBytes;
            if (ok) {
                auto r = live.find(read_be64(v.mv_data));
                ok = r != live.end() && r->second == read_be32(k.mv_data);
            }
            if (!ok && stray++ < 5) {
                std::string hex;
                for (size_t i = std::min<size_t>(4, k.mv_size); i < k.mv_size; ++i) {
                    static const char* digits = "0123456789abcdef";
                    unsigned char c = static_cast<const unsigned char*>(k.mv_data)[i];
                    hex += digits[c >> 4];
                    hex += digits[c & 15];
                }
                bad("a lexical posting under word digest " + hex + " is damaged or names no live record of its scope");
            }
        }
    }
    for (const auto& [scope, st] : stats)
        if (!counted.count(scope))
            bad("scope " + std::to_string(scope) + " has no lexical statistics for its " + std::to_string(st.docs) +
                " records");
    if (held != expected)
        bad("the lexical index holds " + std::to_string(held) + " postings for " + std::to_string(expected) +
            " words of the records");
    if (words_total(txn) != words)
        bad("the lexical word count (" + std::to_string(words_total(txn)) + ") disagrees with the records (" +
            std::to_string(words) + ")");
}

}  // namespace agentsensus
