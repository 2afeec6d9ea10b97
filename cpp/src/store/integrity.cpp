// StoreImpl::verify and StoreImpl::repair: the store's invariants I1..I19 of the
// format map (schema.hpp, docs/file-format.md), checked one by one in the
// spirit of SQLite's integrity_check, and the rebuild of everything derived
// from the primary tables.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <shared_mutex>
#include <unordered_map>
#include <unordered_set>

#include "agentsensus/limits.hpp"
#include "agentsensus/page_check.hpp"
#include "format/bytes.hpp"
#include "format/schema.hpp"
#include "store/store_impl.hpp"

namespace agentsensus {

namespace {

constexpr size_t kMaxReports = 1000;

std::string id_str(uint64_t id) { return "record " + std::to_string(id); }

std::string hex(std::string_view b) {
    static const char* d = "0123456789abcdef";
    std::string out;
    for (unsigned char c : b) {
        out += d[c >> 4];
        out += d[c & 15];
    }
    return out;
}

// Walks every (key, value) of a table, duplicates included.
template <class F> void each(MDB_txn* txn, MDB_dbi dbi, F&& fn) {
    Cursor c(txn, dbi);
    MDB_val k, v;
    bool more = c.op(k, v, MDB_FIRST);
    while (more) {
        fn(k, v);
        more = c.op(k, v, MDB_NEXT);
    }
}

void drop_all(MDB_txn* txn, MDB_dbi dbi) {
    int rc = mdb_drop(txn, dbi, 0);
    if (rc) throw_lmdb(rc, "mdb_drop");
}

bool has_pair(MDB_txn* txn, MDB_dbi dbi, MDB_val k, MDB_val v) {
    Cursor c(txn, dbi);
    return c.op(k, v, MDB_GET_BOTH);
}

}  // namespace

// StoreImpl::verify's checks, one per invariant of the format map (schema.hpp),
// in the order they run: later checks use what earlier ones gathered (the
// owner names, the live records).
class Verifier {
public:
    Verifier(StoreImpl& s, MDB_txn* t, const StoreImpl::DigestFn& digest,
             std::shared_lock<std::shared_mutex>& index_lock)
        : s_(s),
          index_lock_(index_lock),
          digest_(digest),
          t_(t),
          db_(s.db_),
          next_id_(s.meta_u64(t, kMetaNextId, 1)),
          next_merge_(s.meta_u64(t, kMetaNextMerge, 1)),
          next_journal_(s.meta_u64(t, kMetaNextJournal, 1)),
          next_owner_(s.meta_u64(t, kMetaNextOwner, 1)),
          vec_(s.dim_) {}

    std::vector<std::string> run() {
        owner_names();         // I2
        records();             // I3
        vectors();             // I4
        owner_sets();          // I5
        hist();                // I6
        edges();               // I7
        text_index();          // I8
        merge_log();           // I9
        journal();             // I10
        index();               // I11
        index_lock_.unlock();  // writers of this process wait for it; the rest reads LMDB only
        said();                // I12
        s_.verify_scopes(t_, records_, [&](std::string m) { bad(std::move(m)); });  // I14 (store_scopes.cpp)
        // I13 (store_batch_keys.cpp)
        if (s_.has_batch_keys_) verify_batch_keys(t_, db_.batch_keys, next_id_, [&](std::string m) { bad(m); });
        s_.items_->verify(t_, [&](std::string m) { bad(std::move(m)); });  // I15
        s_.verify_record_meta(t_, records_,
                              [&](std::string m) { bad(std::move(m)); });  // I16, I17 (store_store_record_meta.cpp)
        s_.verify_versions(t_, records_, [&](std::string m) { bad(std::move(m)); });  // I21 (store_versions.cpp)
        s_.lexical_->verify(t_, [&](std::string m) { bad(std::move(m)); });           // I18
        if (digest_) text_digests();                                                  // I19
        return std::move(out_);
    }

private:
    void bad(std::string s) {
        if (out_.size() < kMaxReports) out_.push_back(std::move(s));
    }

    // I2: owner names and ids are a bijection, every id below next_agent.
    void owner_names() {
        each(t_, db_.owner_names, [&](MDB_val& k, MDB_val& v) {
            if (k.mv_size != 4) return bad("an owner-name key is damaged");
            uint32_t a = read_be32(k.mv_data);
            names_[a] = std::string(view(v));
            MDB_val back;
            if (!agentsensus::get(t_, db_.owners_by_name, v, back) || back.mv_size != 4 ||
                load<uint32_t>(back.mv_data) != a)
                bad("owner '" + std::string(view(v)) + "' (id " + std::to_string(a) +
                    ") is missing from the name index");
            if (a >= next_owner_) bad("owner id " + std::to_string(a) + " is beyond the owner counter");
        });
        each(t_, db_.owners_by_name, [&](MDB_val& k, MDB_val& v) {
            if (v.mv_size != 4 || !names_.count(load<uint32_t>(v.mv_data)))
                bad("owner name '" + std::string(view(k)) + "' points to no owner id");
        });
    }

    // I3: every record decodes, has a non-empty text, an id in [1, next_id),
    // a finite vector of dim floats and (I5 counts them) an owner.
    void records() {
        each(t_, db_.records, [&](MDB_val& k, MDB_val& v) {
            if (k.mv_size != 8) return bad("a record key is damaged");
            uint64_t id = read_be64(k.mv_data);
            records_.insert(id);
            RecordHeader h;
            std::string_view text;
            if (!decode_record(v, h, text))
                bad(id_str(id) + " is damaged (too short)");
            else if (text.empty())
                bad(id_str(id) + " has empty text");
            if (id == 0 || id >= next_id_)
                bad(id_str(id) + " is beyond the record counter (" + std::to_string(next_id_) + ")");
            try {
                if (!s_.vector_of(t_, id, vec_.data())) {
                    bad(id_str(id) + " has no vector");
                } else {
                    for (float x : vec_)
                        if (!std::isfinite(x)) {
                            bad(id_str(id) + " has a vector with NaN or inf");
                            break;
                        }
                }
            } catch (const DamagedPage&) {
                throw;  // the transaction is unusable: report the page, not a record
            } catch (const Corrupt&) {
                bad(id_str(id) + " has a vector of the wrong size");
            }
        });
    }

    // I4: every vector belongs to a record.
    void vectors() {
        each(t_, db_.vectors, [&](MDB_val& k, MDB_val&) {
            if (k.mv_size != 8 || !records_.count(read_be64(k.mv_data)))
                bad("a vector belongs to no record (" + (k.mv_size == 8 ? id_str(read_be64(k.mv_data)) : "bad key") +
                    ")");
        });
    }

    // I5: owner sets (owners) and owner lists (owned) mirror each other and
    // name known owners; every record has an owner. Counts the owner sets
    // for I6.
    void owner_sets() {
        for (uint64_t id : records_) {
            Be64 key_bytes(id);
            size_t n = 0;
            Cursor c(t_, db_.owners);
            MDB_val key = val(key_bytes.b, 8), ov;
            bool more = c.op(key, ov, MDB_SET);
            if (more) more = c.op(key, ov, MDB_FIRST_DUP);
            while (more) {
                ++n;
                if (ov.mv_size != 4) {
                    bad(id_str(id) + " has a damaged owner entry");
                } else {
                    uint32_t a = load<uint32_t>(ov.mv_data);
                    if (!names_.count(a)) bad(id_str(id) + " is owned by unknown owner id " + std::to_string(a));
                    Be32 ak(a);
                    if (!has_pair(t_, db_.owned, val(ak.b, 4), val(&id, 8)))
                        bad(id_str(id) + " is owned by '" + names_[a] + "', but is missing from that owner's list");
                }
                more = c.op(key, ov, MDB_NEXT_DUP);
            }
            if (n == 0)
                bad(id_str(id) + " has no owner");
            else
                ++hist_[static_cast<uint32_t>(n)];
        }
        each(t_, db_.owned, [&](MDB_val& k, MDB_val& v) {
            if (k.mv_size != 4 || v.mv_size != 8) return bad("an owner-list entry is damaged");
            uint32_t a = read_be32(k.mv_data);
            uint64_t id = load<uint64_t>(v.mv_data);
            Be64 ik(id);
            if (!records_.count(id))
                bad("owner '" + names_[a] + "' lists missing " + id_str(id));
            else if (!has_pair(t_, db_.owners, val(ik.b, 8), val(&a, 4)))
                bad("owner '" + names_[a] + "' lists " + id_str(id) + ", whose owner set lacks it");
        });
    }

    // I6: the owner-count histogram behind stats() equals a count over the
    // owner sets.
    void hist() {
        std::map<uint32_t, uint64_t> stored;
        each(t_, db_.hist, [&](MDB_val& k, MDB_val& v) {
            if (k.mv_size != 4 || v.mv_size != 8) return bad("the owner-count histogram is damaged");
            stored[read_be32(k.mv_data)] = load<uint64_t>(v.mv_data);
        });
        if (stored != hist_) bad("the owner-count histogram disagrees with the owner sets (stats are off)");
    }

    // I7: affiliation edges are symmetric, between live records, with no
    // loops; meta linked counts the records that have one.
    void edges() {
        std::unordered_set<uint64_t> linked;
        each(t_, db_.edges, [&](MDB_val& k, MDB_val& v) {
            if (k.mv_size != 8 || v.mv_size != 8) return bad("an edge entry is damaged");
            uint64_t a = read_be64(k.mv_data), b = load<uint64_t>(v.mv_data);
            linked.insert(a);
            if (a == b) bad(id_str(a) + " has an edge to itself");
            if (!records_.count(a) || !records_.count(b))
                bad("edge " + std::to_string(a) + "-" + std::to_string(b) + " touches a missing record");
            Be64 bk(b);
            if (!has_pair(t_, db_.edges, val(bk.b, 8), val(&a, 8)))
                bad("edge " + std::to_string(a) + "->" + std::to_string(b) + " has no reverse");
        });
        uint64_t counted = s_.meta_u64(t_, kMetaLinked);
        if (linked.size() != counted)
            bad("the linked-record counter (" + std::to_string(counted) + ") disagrees with the edges (" +
                std::to_string(linked.size()) + ")");
    }

    // I8: the exact-duplicate text index (norms) points to live records, and
    // its reverse (rnorms) mirrors it.
    void text_index() {
        each(t_, db_.norms, [&](MDB_val& k, MDB_val& v) {
            if (k.mv_size != kDigestBytes || v.mv_size != 8) return bad("a text-index entry is damaged");
            uint64_t id = read_be64(v.mv_data);
            if (!records_.count(id)) return bad("text digest " + hex(view(k)) + " points to missing " + id_str(id));
            if (!has_pair(t_, db_.rnorms, val(v.mv_data, 8), k))
                bad("text digest " + hex(view(k)) + " of " + id_str(id) + " is missing from its reverse index");
        });
        each(t_, db_.rnorms, [&](MDB_val& k, MDB_val& v) {
            MDB_val cur;
            if (k.mv_size != 8 || v.mv_size != kDigestBytes) return bad("a reverse text-index entry is damaged");
            if (!agentsensus::get(t_, db_.norms, v, cur) || cur.mv_size != 8 || std::memcmp(cur.mv_data, k.mv_data, 8))
                bad("reverse text index of " + id_str(read_be64(k.mv_data)) + " names a digest that points elsewhere");
        });
    }

    // I9: every merge-log entry is below next_merge, names a live survivor
    // and is indexed under it in rmerges; every rmerges entry names a merge
    // of that survivor.
    void merge_log() {
        each(t_, db_.merges, [&](MDB_val& k, MDB_val& v) {
            if (k.mv_size != 8 || v.mv_size < kMergeHeader) return bad("a merge-log entry is damaged");
            uint64_t seq = read_be64(k.mv_data), survivor = load<uint64_t>(v.mv_data);
            if (seq >= next_merge_) bad("merge " + std::to_string(seq) + " is beyond the merge counter");
            if (!records_.count(survivor)) bad("merge " + std::to_string(seq) + " names missing " + id_str(survivor));
            Be64 sk(survivor);
            if (!has_pair(t_, db_.rmerges, val(sk.b, 8), k))
                bad("merge " + std::to_string(seq) + " is missing from " + id_str(survivor) + "'s merge index");
        });
        each(t_, db_.rmerges, [&](MDB_val& k, MDB_val& v) {
            MDB_val m;
            if (k.mv_size != 8 || v.mv_size != 8 || !agentsensus::get(t_, db_.merges, v, m) || m.mv_size < 8)
                return bad("a merge-index entry names a missing merge");
            if (load<uint64_t>(m.mv_data) != read_be64(k.mv_data))
                bad("merge " + std::to_string(read_be64(v.mv_data)) + " is indexed under the wrong record");
        });
    }

    // I10: the journal is well formed, below next_journal, and replays to
    // exactly the live records (or the index could not catch up).
    void journal() {
        std::set<uint64_t> replay;
        uint64_t last = 0;
        each(t_, db_.journal, [&](MDB_val& k, MDB_val& v) {
            JournalEntry e;
            if (k.mv_size != 8 || !decode_journal(v, e)) return bad("a journal entry is damaged");
            last = read_be64(k.mv_data);
            if (e.op == kAdd)
                replay.insert(e.record);
            else if (e.op == kDel)
                replay.erase(e.record);
            else if (e.op != kOwn && e.op != kDisown)
                bad("journal entry " + std::to_string(last) + " has an unknown operation");
        });
        if (last >= next_journal_) bad("the journal runs past its counter");
        if (replay != records_) bad("replaying the journal does not give the live records (the index cannot catch up)");
    }

    // I12: every said row decodes, belongs to a live record, names an owner
    // of it, and a record with rows has row 0 (no vector) before the others
    // (each with a vector).
    void said() {
        if (!s_.has_said_) return;
        std::set<uint64_t> with_rows, with_row0;
        each(t_, db_.said, [&](MDB_val& k, MDB_val& v) {
            SaidEntry e;
            if (k.mv_size != 16 || !decode_said(v, e)) return bad("a said row is damaged");
            uint64_t id = read_be64(k.mv_data), n = read_be64(static_cast<const unsigned char*>(k.mv_data) + 8);
            if (!records_.count(id)) return bad("a said row names missing " + id_str(id));
            with_rows.insert(id);
            if (n == 0) with_row0.insert(id);
            if (e.vector.size() != (n == 0 ? 0 : s_.dim_ * sizeof(float)))
                bad("said row " + std::to_string(n) + " of " + id_str(id) + " has a vector of the wrong size");
            Be64 rk(id);
            if (!has_pair(t_, db_.owners, val(rk.b, 8), val(&e.owner, 4)))
                bad("said row " + std::to_string(n) + " of " + id_str(id) + " names an owner not in its owner set");
        });
        for (uint64_t id : with_rows)
            if (!with_row0.count(id)) bad(id_str(id) + " has said rows but no row 0");
    }

    // I19: every text digest of a record with said rows (rnorms) is the
    // digest of one of its texts: its text, its said rows' texts, or a text
    // of its merge log. A foreign digest (a poisoned import, a damaged row) would merge
    // every later deposit of that other text into this record.
    void text_digests() {
        if (!s_.has_said_) return;
        std::unordered_map<uint64_t, std::vector<std::string_view>> merged;  // survivor -> merge-log texts
        each(t_, db_.merges, [&](MDB_val&, MDB_val& v) {
            MergeEntry m;
            if (decode_merge(v, m)) {
                merged[m.survivor].push_back(m.kept);
                merged[m.survivor].push_back(m.discarded);
            }
        });
        for (uint64_t id : records_) {
            Be64 key(id);
            MDB_val k = val(key.b, 8), v;
            std::vector<std::string> stored;
            {
                Cursor c(t_, db_.rnorms);
                bool more = c.op(k, v, MDB_SET);
                if (more) more = c.op(k, v, MDB_FIRST_DUP);
                for (; more; more = c.op(k, v, MDB_NEXT_DUP)) stored.emplace_back(view(v));
            }
            if (stored.empty()) continue;
            std::vector<std::string_view> texts;
            MDB_val rv;
            RecordHeader h;
            std::string_view text;
            if (agentsensus::get(t_, db_.records, val(key.b, 8), rv) && decode_record(rv, h, text))
                texts.push_back(text);
            bool rows = false;
            {
                Cursor c(t_, db_.said);
                auto first = said_key(id, 0);
                MDB_val sk = val(first.data(), first.size()), sv;
                for (bool more = c.op(sk, sv, MDB_SET_RANGE); more && sk.mv_size == 16 && read_be64(sk.mv_data) == id;
                     more = c.op(sk, sv, MDB_NEXT)) {
                    rows = true;
                    SaidEntry e;
                    if (decode_said(sv, e) && !e.text.empty()) texts.push_back(e.text);
                }
            }
            // A record without said rows (schema 1) lost the texts of the
            // owners who forgot it and keeps their digests: not traceable.
            if (!rows) continue;
            auto m = merged.find(id);
            if (m != merged.end()) texts.insert(texts.end(), m->second.begin(), m->second.end());
            std::string scope;
            try {
                scope = s_.scope_name(t_, s_.record_scope(t_, id));
            } catch (const DamagedPage&) {
                throw;
            } catch (const Corrupt&) {
                continue;  // I14 reports the scope
            }
            std::unordered_set<std::string> known;
            for (std::string_view t : texts) known.insert(digest_(t, scope));
            for (const std::string& d : stored)
                if (!known.count(d))
                    bad(id_str(id) + " holds text digest " + hex(d) +
                        ", which is the digest of none of its texts: deposits of another text would merge into it");
        }
    }

    // I11: the index (index.usearch, caught up to this transaction by
    // StoreImpl::verify, which holds its lock) holds the same ids and the same
    // vectors as LMDB.
    void index() {
        const size_t dim = s_.dim_;
        size_t missing = 0, differ = 0;
        for (uint64_t id : records_) {
            std::vector<float> iv(dim);
            if (!s_.index_->get(id, iv.data())) {
                if (missing++ < 5) bad("the index lacks " + id_str(id));
                continue;
            }
            if (!s_.vector_of(t_, id, vec_.data())) continue;
            float worst = 0.f;
            for (size_t i = 0; i < dim; ++i) worst = std::max(worst, std::fabs(iv[i] - vec_[i]));
            // An int8 graph holds each component within max_error of LMDB's.
            if (worst > std::max(1e-5f, s_.index_->max_error()) && differ++ < 5)
                bad("the index holds another vector for " + id_str(id));
        }
        if (missing > 5) bad("the index lacks " + std::to_string(missing) + " records in all");
        if (s_.index_->size() != records_.size() - std::min(missing, records_.size()))
            bad("the index holds " + std::to_string(s_.index_->size()) + " vectors for " +
                std::to_string(records_.size()) + " records");
    }

    StoreImpl& s_;
    std::shared_lock<std::shared_mutex>& index_lock_;
    const StoreImpl::DigestFn& digest_;
    MDB_txn* t_;
    const StoreImpl::Dbs& db_;
    const uint64_t next_id_, next_merge_, next_journal_, next_owner_;
    std::vector<std::string> out_;
    std::unordered_map<uint32_t, std::string> names_;
    std::set<uint64_t> records_;
    std::map<uint32_t, uint64_t> hist_;
    std::vector<float> vec_;
};

std::vector<std::string> StoreImpl::verify(const DigestFn& digest) {
    check_open();
    std::optional<ReadTxn> rt(std::in_place, *env_);
    // I1, the file's structure, first and read without LMDB's map (the read
    // transaction keeps the pages walked from being reused): reading damaged
    // pages through LMDB could kill the process, so stop at any damage.
    std::vector<std::string> pages = check_pages(dir_, true);
    if (!pages.empty()) return pages;
    // The index caught up to exactly this snapshot (I11), so a writer in
    // another process is never reported as damage. When a writer of this
    // process moved the index past it meanwhile, a newer snapshot is taken
    // (bounded; the last try compares what it has).
    for (int attempt = 0;; ++attempt) {
        {
            std::unique_lock<std::shared_mutex> up(index_mu_);
            if (applied_seq_ < journal_end(rt->get())) catch_up_locked(rt->get());
        }
        std::shared_lock<std::shared_mutex> lock(index_mu_);
        if (applied_seq_ == journal_end(rt->get()) || attempt >= 50)
            return Verifier(*this, rt->get(), digest, lock).run();
        lock.unlock();
        rt.reset();
        rt.emplace(*env_);
    }
}

// StoreImpl::repair's steps, in the order they run inside its one write
// transaction. The primary tables (schema.hpp) are read first; each later
// step rebuilds derived tables from them and from the records kept. Every
// decision comes from sequential scans: a damaged key can leave a table out
// of order, and LMDB's lookups by key then miss entries.
class Repairer {
public:
    Repairer(StoreImpl& s, MDB_txn* t) : s_(s), t_(t), db_(s.db_) {}

    void run(const std::vector<std::pair<uint64_t, std::string>>& digests, const unsigned char* fresh_uuid) {
        read_owners();
        keep_sound_records();
        s_.repair_scopes(t_, keep_);  // I14: before every step that reads keep_ (store_scopes.cpp)
        rebuild_owner_sets();
        s_.items_->repair(t_);  // I15: refs keep the owner sets' pairs
        rebuild_owners_by_name();
        rebuild_edges();
        prune_merge_log();
        prune_said_rows();
        s_.repair_record_meta(t_, keep_);  // I16, I17: after the owner sets are rebuilt
        s_.repair_versions(t_, keep_);     // I21: likewise (store_versions.cpp)
        rebuild_text_index(digests);
        rebuild_journal(fresh_uuid);
        repair_batch_keys(t_, db_.batch_keys, s_.meta_u64(t_, kMetaNextId, 1));  // I13, after next_id is settled
        s_.lexical_->build(t_, nullptr);  // I18, from the records kept: after every step that drops records
    }

private:
    // Owner names by id, and every owner-set entry as it lies.
    void read_owners() {
        each(t_, db_.owner_names, [&](MDB_val& k, MDB_val& v) {
            if (k.mv_size == 4) names_[read_be32(k.mv_data)] = std::string(view(v));
        });
        each(t_, db_.owners, [&](MDB_val& k, MDB_val& v) {
            uint32_t a = v.mv_size == 4 ? load<uint32_t>(v.mv_data) : 0;
            owner_rows_.emplace_back(std::string(view(k)), a);
            if (k.mv_size == 8 && names_.count(a)) owned_.insert(read_be64(k.mv_data));
        });
    }

    // Scans a table of be64 keys: the sound entries by id, and whether
    // lookups by key can be trusted (keys in order, and each one found again
    // by a lookup: a damaged branch key misroutes lookups while the leaves
    // still scan in order).
    bool scan(MDB_dbi dbi, const std::function<bool(uint64_t, const MDB_val&)>& sound,
              std::unordered_set<uint64_t>& ids) {
        uint64_t prev = 0;
        bool ordered = true;
        each(t_, dbi, [&](MDB_val& k, MDB_val& v) {
            if (k.mv_size != 8) {
                ordered = false;
                return;
            }
            uint64_t id = read_be64(k.mv_data);
            MDB_val found;
            if (id <= prev || !agentsensus::get(t_, dbi, k, found) || found.mv_data != v.mv_data) ordered = false;
            prev = id;
            if (id != 0 && sound(id, v)) ids.insert(id);
        });
        return ordered;
    }

    // Keeps the entries of kept records: deletes the others by key, or, when
    // the keys are out of order, rewrites the table from a scan.
    void prune(MDB_dbi dbi, bool ordered) {
        if (ordered) {
            std::vector<std::string> stale;
            each(t_, dbi, [&](MDB_val& k, MDB_val&) {
                if (!keep_.count(read_be64(k.mv_data))) stale.emplace_back(view(k));
            });
            for (auto& k : stale) del(t_, dbi, val(k));
            return;
        }
        std::map<uint64_t, std::string> rows;
        each(t_, dbi, [&](MDB_val& k, MDB_val& v) {
            if (k.mv_size == 8 && keep_.count(read_be64(k.mv_data)))
                rows.emplace(read_be64(k.mv_data), std::string(view(v)));
        });
        drop_all(t_, dbi);
        for (auto& [id, v] : rows) {
            Be64 k(id);
            put(t_, dbi, val(k.b, 8), val(v), MDB_APPEND);
        }
    }

    // The records that can be served: a sound record with a vector of dim
    // floats and a known owner (I3). The others leave records and vectors.
    void keep_sound_records() {
        std::unordered_set<uint64_t> with_vector, sound;
        const size_t vector_bytes = s_.dim_ * sizeof(float);
        bool vectors_ordered =
            scan(db_.vectors, [&](uint64_t, const MDB_val& v) { return v.mv_size == vector_bytes; }, with_vector);
        bool records_ordered = scan(
            db_.records,
            [&](uint64_t id, const MDB_val& v) {
                RecordHeader h;
                std::string_view text;
                return decode_record(v, h, text) && !text.empty() && with_vector.count(id) && owned_.count(id);
            },
            sound);
        keep_.insert(sound.begin(), sound.end());
        prune(db_.records, records_ordered);
        prune(db_.vectors, vectors_ordered);
    }

    // Owner sets of kept records with known owners, their owner lists and
    // the owner-count histogram (I5, I6).
    void rebuild_owner_sets() {
        drop_all(t_, db_.owners);
        drop_all(t_, db_.owned);
        drop_all(t_, db_.hist);
        std::map<uint64_t, uint32_t> counts;
        for (auto& [k, a] : owner_rows_) {
            if (k.size() != 8 || !names_.count(a)) continue;
            uint64_t id = read_be64(k.data());
            if (!keep_.count(id)) continue;
            if (put(t_, db_.owners, val(k), val(&a, 4), MDB_NODUPDATA)) {
                Be32 ak(a);
                put(t_, db_.owned, val(ak.b, 4), val(&id, 8), MDB_NODUPDATA);
                ++counts[id];
            }
        }
        std::map<uint32_t, uint64_t> hist;
        for (auto& [id, n] : counts) ++hist[n];
        for (auto& [n, c] : hist) {
            Be32 k(n);
            put(t_, db_.hist, val(k.b, 4), val(&c, 8));
        }
    }

    // The owner-name index from the ids (I2).
    void rebuild_owners_by_name() {
        drop_all(t_, db_.owners_by_name);
        for (auto& [a, name] : names_) put(t_, db_.owners_by_name, val(name), val(&a, 4));
    }

    // Edges: the symmetric closure over kept records, no loops (I7).
    void rebuild_edges() {
        std::set<std::pair<uint64_t, uint64_t>> edges;
        each(t_, db_.edges, [&](MDB_val& k, MDB_val& v) {
            if (k.mv_size != 8 || v.mv_size != 8) return;
            uint64_t a = read_be64(k.mv_data), b = load<uint64_t>(v.mv_data);
            if (a != b && keep_.count(a) && keep_.count(b)) {
                edges.insert({a, b});
                edges.insert({b, a});
            }
        });
        drop_all(t_, db_.edges);
        std::set<uint64_t> linked;
        for (auto& [a, b] : edges) {
            Be64 k(a);
            put(t_, db_.edges, val(k.b, 8), val(&b, 8), MDB_NODUPDATA);
            linked.insert(a);
        }
        s_.set_meta_u64(t_, kMetaLinked, linked.size());
    }

    // The merge log keeps entries of kept records; its index is rebuilt (I9).
    void prune_merge_log() {
        std::vector<std::string> dead_merges;
        std::vector<std::pair<uint64_t, std::string>> merge_index;
        each(t_, db_.merges, [&](MDB_val& k, MDB_val& v) {
            if (k.mv_size != 8 || v.mv_size < kMergeHeader || !keep_.count(load<uint64_t>(v.mv_data)))
                dead_merges.emplace_back(view(k));
            else
                merge_index.emplace_back(load<uint64_t>(v.mv_data), std::string(view(k)));
        });
        for (auto& k : dead_merges) del(t_, db_.merges, val(k));
        drop_all(t_, db_.rmerges);
        for (auto& [id, seq] : merge_index) {
            Be64 k(id);
            put(t_, db_.rmerges, val(k.b, 8), val(seq));
        }
    }

    // Said rows of kept records whose owner is still in the owner set; a
    // record that lost row 0 loses them all (it reads as schema 1) (I12).
    void prune_said_rows() {
        std::map<std::string, std::string> rows;
        const size_t vector_bytes = s_.dim_ * sizeof(float);
        each(t_, db_.said, [&](MDB_val& k, MDB_val& v) {
            SaidEntry e;
            if (k.mv_size != 16 || !decode_said(v, e)) return;
            uint64_t id = read_be64(k.mv_data), n = read_be64(static_cast<const unsigned char*>(k.mv_data) + 8);
            Be64 rk(id);
            if (keep_.count(id) && has_pair(t_, db_.owners, val(rk.b, 8), val(&e.owner, 4)) &&
                e.vector.size() == (n ? vector_bytes : 0))
                rows.emplace(std::string(view(k)), std::string(view(v)));
        });
        drop_all(t_, db_.said);
        uint64_t record = 0;
        bool has0 = false;
        for (auto& [k, v] : rows) {
            uint64_t id = read_be64(k.data());
            if (id != record) {
                record = id;
                has0 = read_be64(reinterpret_cast<const unsigned char*>(k.data()) + 8) == 0;
            }
            if (has0) put(t_, db_.said, val(k), val(v), MDB_APPEND);
        }
    }

    // The exact-duplicate index, from the digests the caller computed (I8).
    void rebuild_text_index(const std::vector<std::pair<uint64_t, std::string>>& digests) {
        drop_all(t_, db_.norms);
        drop_all(t_, db_.rnorms);
        for (auto& [id, d] : digests) {
            if (d.size() != kDigestBytes || !keep_.count(id)) continue;
            Be64 k(id);
            if (put(t_, db_.norms, val(d), val(k.b, 8), MDB_NOOVERWRITE)) put(t_, db_.rnorms, val(k.b, 8), val(d));
        }
    }

    // A fresh journal of the kept records (I10), under a new store identity
    // so that every saved index (this process's or another's) is rebuilt.
    void rebuild_journal(const unsigned char* fresh_uuid) {
        drop_all(t_, db_.journal);
        uint64_t seq = 1;
        for (uint64_t id : keep_) {
            auto e = encode_journal(JournalEntry{kAdd, id, 0});
            Be64 k(seq++);
            put(t_, db_.journal, val(k.b, 8), val(e.data(), e.size()), MDB_APPEND);
        }
        s_.set_meta_u64(t_, kMetaNextJournal, seq);
        uint64_t max_id = keep_.empty() ? 0 : *keep_.rbegin();
        if (s_.meta_u64(t_, kMetaNextId, 1) <= max_id) s_.set_meta_u64(t_, kMetaNextId, max_id + 1);
        put(t_, db_.meta, meta_key(kMetaUuid), val(fresh_uuid, kMetaUuid.size));
    }

    StoreImpl& s_;
    MDB_txn* t_;
    const StoreImpl::Dbs& db_;
    std::unordered_map<uint32_t, std::string> names_;
    std::vector<std::pair<std::string, uint32_t>> owner_rows_;
    std::unordered_set<uint64_t> owned_;  // records with a known owner
    std::set<uint64_t> keep_;             // the records repair keeps
};

void StoreImpl::check_alone() {
    check_open();
    Env::Exclusive alone(*env_);
}

void StoreImpl::repair(const std::vector<std::pair<uint64_t, std::string>>& digests) {
    check_open();
    Env::Exclusive alone(*env_);  // refused while another process has the store open
    unsigned char fresh_uuid[16];
    std::random_device rd;
    for (int i = 0; i < 16; i += 4) {
        uint32_t r = rd();
        std::memcpy(fresh_uuid + i, &r, 4);
    }
    // A fresh Repairer per run: the map may grow and the transaction run again.
    env_->write([&](MDB_txn* t) { Repairer(*this, t).run(digests, fresh_uuid); });
    std::memcpy(uuid_, fresh_uuid, 16);
    std::unique_lock<std::shared_mutex> lock(index_mu_);
    std::remove((dir_ + kIndexFile).c_str());
    ReadTxn t(*env_);
    rebuild_index_locked(t.get());
}

}  // namespace agentsensus
