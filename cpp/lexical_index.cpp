#include "lexical_index.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "bytes.hpp"
#include "schema.hpp"

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

double term_weight(double idf, uint32_t tf, uint32_t length, double avgdl) {
    double t = tf;
    return idf * t * (kK1 + 1) / (t + kK1 * (1 - kB + kB * length / avgdl));
}

}  // namespace

std::vector<std::string> lexical_words(std::string_view text) {
    std::vector<std::string> out;
    size_t i = 0, n = text.size();
    while (i < n) {
        while (i < n && !word_byte(static_cast<unsigned char>(text[i]))) ++i;
        size_t start = i;
        while (i < n && word_byte(static_cast<unsigned char>(text[i]))) ++i;
        // One letter is a pronoun or an article ("I", "a"); one digit is a
        // number (a day, a scene, a count), which tells statements apart.
        if (i - start < 2 && !(i - start == 1 && text[start] >= '0' && text[start] <= '9')) continue;
        std::string w(text.substr(start, std::min(i - start, kMaxWordBytes)));
        for (char& c : w)
            if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        out.push_back(std::move(w));
    }
    return out;
}

LexicalDoc lexical_doc(std::string_view text) {
    LexicalDoc d;
    for (std::string& w : lexical_words(text)) {
        ++d.tf[std::move(w)];
        ++d.length;
    }
    return d;
}

LexicalIndex::LexicalIndex(Env& env, MDB_dbi meta, MDB_dbi records, bool readonly) : meta_(meta), records_(records) {
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

void LexicalIndex::put_postings(MDB_txn* txn, uint64_t id, const LexicalDoc& d) {
    for (const auto& [w, tf] : d.tf) {
        auto p = encode_posting(Posting{id, tf, d.length});
        put(txn, postings_, val(w), val(p.data(), p.size()));
    }
}

// Finds each word's posting of the record by its id prefix, so a posting of
// another count or length (damage) goes too.
void LexicalIndex::drop_postings(MDB_txn* txn, uint64_t id, const LexicalDoc& d) {
    Cursor c(txn, postings_);
    for (const auto& [w, tf] : d.tf) {
        auto probe = encode_posting(Posting{id, 0, 0});
        MDB_val k = val(w), v = val(probe.data(), probe.size());
        if (!c.op(k, v, MDB_GET_BOTH_RANGE)) continue;
        if (v.mv_size != kPosting || read_be64(v.mv_data) != id) continue;
        int rc = mdb_cursor_del(c.get(), 0);
        if (rc) throw_lmdb(rc, "mdb_cursor_del");
    }
}

void LexicalIndex::add(MDB_txn* txn, uint64_t id, std::string_view text) {
    if (!built(txn)) return;
    LexicalDoc d = lexical_doc(text);
    put_postings(txn, id, d);
    set_words_total(txn, words_total(txn) + d.length);
}

void LexicalIndex::remove(MDB_txn* txn, uint64_t id, std::string_view text) {
    if (!built(txn)) return;
    LexicalDoc d = lexical_doc(text);
    drop_postings(txn, id, d);
    uint64_t total = words_total(txn);
    set_words_total(txn, total >= d.length ? total - d.length : 0);
}

void LexicalIndex::retext(MDB_txn* txn, uint64_t id, std::string_view before, std::string_view after) {
    if (before == after || !built(txn)) return;
    remove(txn, id, before);
    add(txn, id, after);
}

void LexicalIndex::build(MDB_txn* txn, const std::function<void(uint64_t, uint64_t)>& progress) {
    int rc = mdb_drop(txn, postings_, 0);
    if (rc) throw_lmdb(rc, "mdb_drop");
    const uint64_t total = entries(txn, records_);
    uint64_t done = 0, words = 0;
    Cursor c(txn, records_);
    MDB_val k, v;
    for (bool more = c.op(k, v, MDB_FIRST); more; more = c.op(k, v, MDB_NEXT)) {
        RecordHeader h;
        std::string_view text;
        // A damaged record is verify's and repair's to report; it has no words here.
        if (k.mv_size == 8 && decode_record(v, h, text)) {
            LexicalDoc d = lexical_doc(text);
            put_postings(txn, read_be64(k.mv_data), d);
            words += d.length;
        }
        if (++done % 4096 == 0 && progress) progress(done, total);
    }
    if (progress) progress(done, total);
    uint64_t version = kLexicalVersion;
    put(txn, meta_, meta_key(kMetaLexical), val(&version, 8));
    set_words_total(txn, words);
}

std::vector<LexicalHit> LexicalIndex::search(MDB_txn* txn, std::string_view query, size_t k,
                                             const std::vector<LexicalOverlay>& overlay,
                                             const std::vector<int64_t>& also, std::vector<float>& also_scores,
                                             const std::function<bool(uint64_t)>* keep) const {
    also_scores.assign(also.size(), 0.f);
    if (!built(txn)) return {};
    // The corpus as the overlay leaves it: its new records join, and its
    // committed records are scored by their overlay text, not the stored one.
    double docs = static_cast<double>(entries(txn, records_));
    double words = static_cast<double>(words_total(txn));
    std::unordered_map<int64_t, LexicalDoc> over;
    std::unordered_set<int64_t> no_hit;  // overlay records that are never hits
    std::vector<LexicalDoc> replaced;    // the stored texts overlay records replace
    for (const LexicalOverlay& o : overlay) {
        if (over.count(o.id)) continue;
        LexicalDoc d = lexical_doc(o.text);
        if (o.id < 0) {
            docs += 1;
            words += d.length;
        } else {
            Be64 key(static_cast<uint64_t>(o.id));
            MDB_val rv;
            RecordHeader h;
            std::string_view text;
            if (!agentsensus::get(txn, records_, val(key.b, 8), rv) || !decode_record(rv, h, text)) continue;
            LexicalDoc old = lexical_doc(text);
            words += static_cast<double>(d.length) - old.length;
            replaced.push_back(std::move(old));
        }
        over.emplace(o.id, std::move(d));
        if (!o.hit) no_hit.insert(o.id);
    }
    if (docs <= 0) return {};
    const double avgdl = words > 0 ? words / docs : 1.0;
    const double common = std::max<double>(static_cast<double>(kLexicalCommonFloor), docs / 10);

    std::map<std::string, uint32_t> terms = lexical_doc(query).tf;  // sorted: one summation order everywhere
    std::unordered_map<int64_t, double> acc;
    Cursor c(txn, postings_);
    for (const auto& term : terms) {
        const std::string& w = term.first;
        MDB_val key = val(w), v;
        size_t stored = 0;
        bool found = c.op(key, v, MDB_SET);
        if (found) {
            int rc = mdb_cursor_count(c.get(), &stored);
            if (rc) throw_lmdb(rc, "mdb_cursor_count");
        }
        double df = static_cast<double>(stored);
        for (const LexicalDoc& old : replaced) df -= old.tf.count(w);
        for (const auto& [id, d] : over) df += d.tf.count(w);
        if (df <= 0 || df > common) continue;
        const double idf = std::log(1 + (docs - df + 0.5) / (df + 0.5));
        if (found) {
            bool more = c.op(key, v, MDB_GET_MULTIPLE);
            while (more) {
                const unsigned char* p = static_cast<const unsigned char*>(v.mv_data);
                for (size_t at = 0; at + kPosting <= v.mv_size; at += kPosting) {
                    Posting x = decode_posting(p + at);
                    int64_t id = static_cast<int64_t>(x.id);
                    if (over.count(id)) continue;  // scored by its overlay text below
                    acc[id] += term_weight(idf, x.tf, x.length, avgdl);
                }
                more = c.op(key, v, MDB_NEXT_MULTIPLE);
            }
        }
        for (const auto& [id, d] : over) {
            auto it = d.tf.find(w);
            if (it != d.tf.end()) acc[id] += term_weight(idf, it->second, d.length, avgdl);
        }
    }
    for (size_t i = 0; i < also.size(); ++i) {
        auto it = acc.find(also[i]);
        if (it != acc.end()) also_scores[i] = static_cast<float>(it->second);
    }
    std::vector<LexicalHit> hits;
    hits.reserve(acc.size());
    for (const auto& [id, s] : acc)
        if (s > 0 && !no_hit.count(id) && (!keep || id < 0 || (*keep)(static_cast<uint64_t>(id))))
            hits.push_back(LexicalHit{id, static_cast<float>(s)});
    auto better = [](const LexicalHit& a, const LexicalHit& b) {
        return a.score > b.score || (a.score == b.score && tie_key(a.id) < tie_key(b.id));
    };
    size_t top = std::min(k, hits.size());
    std::partial_sort(hits.begin(), hits.begin() + top, hits.end(), better);
    hits.resize(top);
    return hits;
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
    std::set<uint64_t> live;
    {
        Cursor rc(txn, records_), pc(txn, postings_);
        MDB_val k, v;
        for (bool more = rc.op(k, v, MDB_FIRST); more; more = rc.op(k, v, MDB_NEXT)) {
            RecordHeader h;
            std::string_view text;
            if (k.mv_size != 8 || !decode_record(v, h, text)) continue;  // I3 reports it
            uint64_t id = read_be64(k.mv_data);
            live.insert(id);
            LexicalDoc d = lexical_doc(text);
            words += d.length;
            for (const auto& [w, tf] : d.tf) {
                ++expected;
                auto p = encode_posting(Posting{id, tf, d.length});
                MDB_val pk = val(w), pv = val(p.data(), p.size());
                if (!pc.op(pk, pv, MDB_GET_BOTH) && missing++ < 5)
                    bad("record " + std::to_string(id) + " lacks its lexical posting for '" + w + "'");
            }
        }
    }
    if (missing > 5) bad("the lexical index lacks " + std::to_string(missing) + " postings in all");
    size_t stray = 0;
    uint64_t held = 0;
    {
        Cursor c(txn, postings_);
        MDB_val k, v;
        for (bool more = c.op(k, v, MDB_FIRST); more; more = c.op(k, v, MDB_NEXT)) {
            ++held;
            bool ok = v.mv_size == kPosting && k.mv_size >= 1 && k.mv_size <= kMaxWordBytes;
            if (ok) ok = live.count(read_be64(v.mv_data)) > 0;
            if (!ok && stray++ < 5)
                bad("a lexical posting for '" + std::string(view(k)) + "' is damaged or names no live record");
        }
    }
    if (held != expected)
        bad("the lexical index holds " + std::to_string(held) + " postings for " + std::to_string(expected) +
            " words of the records");
    if (words_total(txn) != words)
        bad("the lexical word count (" + std::to_string(words_total(txn)) + ") disagrees with the records (" +
            std::to_string(words) + ")");
}

}  // namespace agentsensus
