// The Store's side of the lexical index (lexical_index.hpp): building it for
// a store from before it, a batch's lexical candidates, and recall with the
// vector and lexical rankings fused.
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <shared_mutex>
#include <unordered_map>

#include "store/store_impl.hpp"

namespace agentsensus {

namespace {
// A lexical hit scoring at least this share of a statement's best score
// holds most of what it says: it needs no mutual coverage
// (LexicalQuery::mutual), and it passes a similarity gate
// (LexicalQuery::min_similarity), since a witness's frame can move a true
// restatement's vector far from its record's.
constexpr double kMostOf = 0.5;
}  // namespace

bool StoreImpl::lexical_built() {
    check_open();
    ReadTxn t(*env_);
    return lexical_->built(t.get());
}

void StoreImpl::build_lexical(const std::function<void(uint64_t, uint64_t)>& progress) {
    check_open();
    if (env_->readonly()) throw Error("the store at " + dir_ + " is open read-only");
    // Another process may have built it meanwhile: the check is inside the
    // write transaction, which excludes every other writer.
    env_->write([&](MDB_txn* txn) {
        if (!lexical_->built(txn)) lexical_->build(txn, progress);
    });
}

LexicalAnswer StoreImpl::lexical(const std::vector<LexicalQuery>& queries, size_t k,
                                 const std::vector<LexicalOverlay>& overlay, std::string_view scope) {
    check_open();
    LexicalAnswer out;
    out.offsets.assign(queries.size() + 1, 0);
    out.also.resize(queries.size());
    std::vector<float> q(dim_), buf(dim_);
    ReadTxn t(*env_);
    // Only the records of the deposit's scope are candidates (its new
    // records, the overlay's negative ids, are of it by construction).
    ScopeView sv = scope_view(t.get(), scope);
    std::function<bool(uint64_t)> keep = [&](uint64_t id) { return sv.contains(id); };
    std::vector<uint64_t> named;
    // The scope's own statistics: no score moves with another scope's records.
    const LexicalCorpus corpus =
        lexical_->corpus(t.get(), scope_id(t.get(), scope), overlay, true);  // once for every query
    out.least.assign(queries.size(), 0.0);
    out.most_of.assign(queries.size(), std::numeric_limits<double>::infinity());
    WordTable held_by;  // words' record counts in the corpus, for mutual coverage
    for (size_t i = 0; i < queries.size(); ++i) {
        const LexicalQuery& lq = queries[i];
        prepare_vector(lq.vector, q.data());
        // A floor weighs the text on the same snapshot, and hits below its
        // least score need not be found (the deposit drops them).
        LexicalIndex::Weighed weighed;
        // The statement's words, read once for weighing, the search and coverage.
        const LexicalDoc said = lexical_doc(lq.text);
        std::vector<std::string> words;
        const std::vector<size_t>* stored = nullptr;
        // A gate (min_similarity) makes the similarity a test, the cheaper one: it goes first. Without one the
        // similarity is only reported, so only the hits coverage keeps have their vectors read.
        const bool gated = lq.min_similarity > -std::numeric_limits<double>::infinity();
        if (lq.floor > 0) {
            weighed = lexical_->weigh(t.get(), corpus, said, lq.floor, lq.mutual > 0 ? &held_by : nullptr);
            words = std::move(weighed.words);
            out.least[i] = weighed.least;
            stored = &weighed.stored;  // the words' counts on this snapshot: the search need not count them again
        } else {
            for (const auto& [word, tf] : said.tf) words.push_back(word);
            if (gated) weighed.best = lexical_->weigh(t.get(), corpus, said, 0).best;  // the best only, for most_of
        }
        // Infinite only when no word of the statement weighs (best 0), and then no record scores above 0:
        // there is no hit for it to exempt.
        if (weighed.best > 0) out.most_of[i] = kMostOf * weighed.best;
        const double most_of = out.most_of[i];
        // A record's words, read once for scoring and coverage: the overlay's text for its ids; null for a
        // record this snapshot lacks.
        std::unordered_map<int64_t, std::shared_ptr<const LexicalDoc>> docs;
        auto words_of = [&](int64_t id) -> std::shared_ptr<const LexicalDoc> {
            if (auto d = docs.find(id); d != docs.end()) return d->second;
            std::shared_ptr<const LexicalDoc> held;
            if (auto o = corpus.over.find(id); o != corpus.over.end()) {
                held = o->second.doc;
            } else {
                Be64 rk(static_cast<uint64_t>(id));
                MDB_val rv;
                RecordHeader rh;
                std::string_view stored;
                if (!agentsensus::get(t.get(), db_.records, val(rk.b, 8), rv)) return nullptr;
                if (!decode_record(rv, rh, stored)) throw Corrupt("record " + std::to_string(id) + " is damaged");
                held = shared_doc(stored);
            }
            docs.emplace(id, held);
            return held;
        };
        std::vector<LexicalHit> hits;
        if (lq.only) {
            // The hits can only be these: score them, under the same rules the search applies (the scope's
            // records, the overlay's hits, nothing excluded), rather than read every posting list.
            auto in_scope = [&](int64_t id) {
                auto o = corpus.over.find(id);
                if (o != corpus.over.end()) return o->second.hit && (id < 0 || sv.contains(static_cast<uint64_t>(id)));
                return id > 0 && sv.contains(static_cast<uint64_t>(id));
            };
            std::vector<int64_t> among;
            // (a near record forgotten since the prepare's snapshot is no hit)
            for (int64_t id : *lq.only)
                if (in_scope(id) && std::find(lq.exclude.begin(), lq.exclude.end(), id) == lq.exclude.end() &&
                    words_of(id))
                    among.push_back(id);
            // the also ids' scores: by the overlay's text, or a committed record's of the scope, as search has them
            for (int64_t id : lq.also)
                if (corpus.over.count(id) || (id > 0 && sv.contains(static_cast<uint64_t>(id)))) words_of(id);
            hits = lexical_->score(t.get(), corpus, words, k, among, docs, lq.also, out.also[i],
                                   lq.floor > 0 && lq.mutual > 0 ? &held_by : nullptr);
            if (gated && most_of < std::numeric_limits<double>::infinity()) {
                // A hit holding most of the statement passes the gate wherever it is: search the scope for
                // those, above the least score a search would want, and rank them with the near ones.
                std::vector<int64_t> skip = lq.exclude;
                skip.insert(skip.end(), among.begin(), among.end());
                std::vector<float> unused;
                std::vector<LexicalHit> most =
                    lexical_->search(t.get(), corpus, words, k, {}, unused, sv.filtered ? &keep : nullptr, &skip,
                                     std::max(out.least[i], most_of), stored);
                for (const LexicalHit& h : most)
                    if (h.score >= most_of) hits.push_back(h);  // the search may return some below its least
                hits = ranked_hits(std::move(hits), k);
            }
        } else {
            hits = lexical_->search(t.get(), corpus, words, k, lq.also, out.also[i], sv.filtered ? &keep : nullptr,
                                    &lq.exclude, out.least[i], stored);
        }
        // Mutual coverage: a record that shares a part of the statement but
        // says a fact of its own besides is no candidate.
        const bool mutual = lq.floor > 0 && lq.mutual > 0;
        // The hit's similarity to the statement into s; false when the hit fails the gate or its vector is
        // missing. An overlay's new record (NaN here) is left to the caller's kernel.
        auto similar = [&](const LexicalHit& h, float& s) {
            if (h.id <= 0) return true;
            if (!vector_of(t.get(), static_cast<uint64_t>(h.id), buf.data()))
                return false;  // a damaged index: verify reports it
            s = similarity(metric_, q.data(), buf.data(), dim_);
            return !(static_cast<double>(s) < lq.min_similarity);  // as a gate compares (NaN passes)
        };
        for (const LexicalHit& h : hits) {
            float s = std::numeric_limits<float>::quiet_NaN();
            // Below the gate, a hit still passes if it holds most of the statement (and its vector is there).
            if (gated && !similar(h, s) && !(h.score >= most_of && !std::isnan(s))) continue;
            // A record that holds most of what the statement says is a candidate whatever else it says (the
            // statement may tell a part of its fact); below that, the two must hold each other.
            if (mutual && h.score >= out.least[i] && h.score < most_of) {
                const std::shared_ptr<const LexicalDoc> held = words_of(h.id);
                if (!held) throw Corrupt("the lexical index names a missing record");
                const double share = weighed.best > 0 ? h.score / weighed.best : 0;
                if (lexical_->coverage(t.get(), corpus, said, *held, share, held_by, lq.mutual) < lq.mutual) continue;
            }
            if (!gated && !similar(h, s)) continue;
            if (h.id > 0) named.push_back(static_cast<uint64_t>(h.id));
            out.hits.push_back(h);
            out.similarity.push_back(s);
        }
        out.offsets[i + 1] = static_cast<uint32_t>(out.hits.size());
    }
    std::sort(named.begin(), named.end());
    named.erase(std::unique(named.begin(), named.end()), named.end());
    out.records.resize(named.size());
    for (size_t i = 0; i < named.size(); ++i)
        if (!read_row(t.get(), named[i], out.records[i])) throw Corrupt("the lexical index names a missing record");
    return out;
}

LexicalWordCounts StoreImpl::lexical_word_counts(const std::vector<std::string>& texts,
                                                 const std::vector<LexicalOverlay>& overlay, std::string_view scope) {
    check_open();
    LexicalWordCounts out;
    ReadTxn t(*env_);
    const LexicalCorpus corpus = lexical_->corpus(t.get(), scope_id(t.get(), scope), overlay, true);
    out.docs = corpus.docs;
    out.avgdl = corpus.avgdl;
    for (const std::string& text : texts) out.words.push_back(lexical_->word_counts(t.get(), corpus, text));
    return out;
}

namespace {
// Reciprocal rank fusion's constant (Cormack et al. 2009): a rank r adds
// 1 / (kRrf + r), so the top of either list counts, and neither list's
// scale matters.
constexpr double kRrf = 60;
}  // namespace

std::vector<Row> StoreImpl::recall_fused(const std::string& owner, const float* query, std::string_view text, size_t k,
                                         bool expand, std::vector<float>& lexical) {
    check_open();
    lexical.clear();
    if (k == 0) return {};
    // Each ranking is read deeper than k, so a record second in both can
    // beat one first in only one.
    const size_t depth = std::max<size_t>(2 * k, 20);
    std::vector<Row> by_vector = recall(owner, query, depth, false);
    std::vector<float> q(dim_), buf(dim_);
    prepare_vector(query, q.data());
    ReadTxn t(*env_);
    if (!lexical_->built(t.get()))
        throw Error("the store at " + dir_ + " has no lexical index yet: open it writable once to build it");
    std::optional<uint32_t> oid = owner_id(t.get(), owner);
    if (!oid) return {};
    // Only records current for the owner, as the vector ranking (store_versions.cpp).
    const RecallFilter current = versioned(t.get(), RecallFilter());
    std::function<bool(uint64_t)> keep = [&](uint64_t id) {
        return owns(t.get(), *oid, id) && passes(t.get(), *oid, id, current);
    };
    std::vector<int64_t> also;  // the vector ranking's records, for their BM25 scores
    for (const Row& r : by_vector) also.push_back(static_cast<int64_t>(r.id));
    // Each record is scored against its own scope's statistics (a scope's
    // postings hold only its records): one search per scope the owner has
    // records in, the hits merged by score.
    std::set<uint32_t> scopes;
    for (uint64_t id : owned_ids(t.get(), *oid)) scopes.insert(record_scope(t.get(), id));
    std::vector<float> also_scores(also.size(), 0.f), got;
    std::vector<LexicalHit> by_words;
    for (uint32_t sid : scopes) {
        std::vector<LexicalHit> hits = lexical_->search(t.get(), sid, text, depth, {}, also, got, &keep);
        by_words.insert(by_words.end(), hits.begin(), hits.end());
        for (size_t i = 0; i < also.size(); ++i) also_scores[i] = std::max(also_scores[i], got[i]);
    }
    std::sort(by_words.begin(), by_words.end(), [](const LexicalHit& a, const LexicalHit& b) {
        return a.score > b.score || (a.score == b.score && a.id < b.id);
    });
    if (by_words.size() > depth) by_words.resize(depth);

    std::unordered_map<uint64_t, double> fused;
    std::unordered_map<uint64_t, float> cosine, words;
    for (size_t r = 0; r < by_vector.size(); ++r) {
        fused[by_vector[r].id] += 1 / (kRrf + r + 1);
        cosine[by_vector[r].id] = by_vector[r].score;
        words[by_vector[r].id] = also_scores[r];
    }
    for (size_t r = 0; r < by_words.size(); ++r) {
        uint64_t id = static_cast<uint64_t>(by_words[r].id);
        fused[id] += 1 / (kRrf + r + 1);
        words[id] = by_words[r].score;
    }
    std::vector<std::pair<double, uint64_t>> order;
    for (const auto& [id, s] : fused) order.emplace_back(s, id);
    std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
        return a.first > b.first || (a.first == b.first && a.second < b.second);
    });
    if (order.size() > k) order.resize(k);

    std::vector<Row> rows;
    std::unordered_set<uint64_t> seen;
    for (const auto& [s, id] : order) {
        Row r;
        if (!read_row(t.get(), id, r)) continue;
        auto c = cosine.find(id);
        if (c != cosine.end()) {
            r.score = c->second;
        } else {
            if (!vector_of(t.get(), id, buf.data())) continue;
            r.score = similarity(metric_, q.data(), buf.data(), dim_);
        }
        r.via = Via::hit;
        auto w = words.find(id);
        lexical.push_back(w != words.end() ? w->second : 0.f);
        seen.insert(id);
        rows.push_back(std::move(r));
    }
    if (!expand) return rows;
    size_t nhits = rows.size();
    for (size_t i = 0; i < nhits; ++i) {
        for (uint64_t nb : neighbors_in(t.get(), rows[i].id)) {
            if (seen.count(nb) || !keep(nb)) continue;
            Row r;
            if (!read_row(t.get(), nb, r)) continue;
            r.via = Via::edge;
            seen.insert(nb);
            lexical.push_back(0.f);
            rows.push_back(std::move(r));
        }
    }
    return rows;
}

}  // namespace agentsensus
