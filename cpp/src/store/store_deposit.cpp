// The deposit path in one file: prepare (phase 1: the nearest records of
// each statement, on a read snapshot) and commit (phase 3: the caller's
// plans in one write transaction, or the conflict that made them stale).
#include "store/store_impl.hpp"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <unordered_set>

#include "agentsensus/limits.hpp"
#include "agentsensus/visible_text.hpp"
#include "format/bytes.hpp"
#include "format/schema.hpp"
#include "index/parallel.hpp"
#include "store/store_util.hpp"

namespace agentsensus {

PrepareResult StoreImpl::prepare(const float* vectors, size_t n, const unsigned char* digests, size_t k,
                                 float min_similarity, std::string_view scope, size_t near_k, float near_floor) {
    check_open();
    std::vector<float> qs(n * dim_);
    for (size_t i = 0; i < n; ++i) prepare_vector(vectors + i * dim_, qs.data() + i * dim_);
    sync_index();
    PrepareResult out;
    out.exact.assign(n, 0);
    out.offsets.assign(n + 1, 0);
    const size_t depth = k + near_k;
    if (near_k > 0) {
        out.near_offsets.assign(n + 1, 0);
        out.near_complete.assign(n, 1);
    }
    std::shared_lock<std::shared_mutex> lock(index_mu_);
    ReadTxn t(*env_);
    // The commit re-checks everything after seq, so seq must not claim more
    // than the index has seen: records this snapshot has but the index
    // lacks are then re-checked at commit instead of being missed.
    out.seq = std::min(journal_end(t.get()), applied_seq_);
    std::vector<uint64_t> named;
    std::vector<size_t> to_search;
    // Only the scope's records are exact duplicates or candidates.
    const ScopeView sv = scope_view(t.get(), scope);
    for (size_t i = 0; i < n; ++i) {
        MDB_val v;
        if (agentsensus::get(t.get(), db_.norms, val(digests + i * kDigestBytes, kDigestBytes), v) &&
            (v.mv_size != 8 || sv.contains(read_be64(v.mv_data)))) {
            if (v.mv_size != 8) throw Corrupt("text index is damaged");
            out.exact[i] = read_be64(v.mv_data);
            named.push_back(out.exact[i]);
        } else if (depth > 0) {
            to_search.push_back(i);
        }
    }
    // A store of at most exact_cutoff records is scanned exactly, as recall
    // scans an owner of that size: the candidates are then the true nearest,
    // ties to the lower id, whatever shape the HNSW graph took (parallel
    // inserts, and usearch's per-slot level generators that concurrent
    // searches reorder, make it differ from run to run).
    std::vector<uint64_t> all;
    const size_t total = entries(t.get(), db_.records);
    if (!to_search.empty() && !sv.filtered && total <= exact_cutoff_) {
        Cursor c(t.get(), db_.records);
        MDB_val rk, rv;
        for (bool more = c.op(rk, rv, MDB_FIRST); more; more = c.op(rk, rv, MDB_NEXT)) {
            if (rk.mv_size != 8) throw Corrupt("record table is damaged");
            all.push_back(read_be64(rk.mv_data));
        }
    }
    // Searches are independent: spread them over the cores (usearch gives
    // each thread its own slot). LMDB reads stay on this thread.
    std::vector<std::vector<Hit>> found(n);
    parallel_for(to_search.size(), [&](size_t j) {
        size_t i = to_search[j];
        if (sv.filtered) {
            found[i] = search_scope(sv, qs.data() + i * dim_, depth, total);
        } else if (all.empty()) {
            found[i] = index_->search(qs.data() + i * dim_, depth);
        } else {
            // What the index lacks (newer than applied_seq_) the commit re-checks, as for a search.
            std::vector<uint64_t> absent;
            found[i] = index_->scan(qs.data() + i * dim_, all.data(), all.size(), depth, absent);
        }
    });
    for (size_t i = 0; i < n; ++i) {
        // The index may hold records newer than this snapshot (another
        // thread caught it up): keep only those the snapshot has.
        size_t taken = 0;
        for (const Hit& h : found[i]) {
            // The k best at or above min_similarity are candidates; below them, near ones.
            const bool candidate = taken < k && h.score >= min_similarity;
            if (!candidate) {
                // Not checked against the snapshot: the lexical step reads each on its own and skips one it lacks.
                if (near_k > 0 && h.score >= near_floor) out.near.push_back(h);
                continue;
            }
            Be64 key(h.id);
            MDB_val rv;
            if (!agentsensus::get(t.get(), db_.records, val(key.b, 8), rv)) continue;
            out.candidates.push_back(h);
            named.push_back(h.id);
            ++taken;
        }
        out.offsets[i + 1] = static_cast<uint32_t>(out.candidates.size());
        if (near_k > 0) {
            out.near_offsets[i + 1] = static_cast<uint32_t>(out.near.size());
            // Hits come best first: a full depth whose last reaches near_floor may have more behind it.
            out.near_complete[i] = found[i].size() < depth || found[i].back().score < near_floor;
        }
    }
    std::sort(named.begin(), named.end());
    named.erase(std::unique(named.begin(), named.end()), named.end());
    out.records.resize(named.size());
    for (size_t i = 0; i < named.size(); ++i)
        if (!read_row(t.get(), named[i], out.records[i])) throw Corrupt("text index names a missing record");
    return out;
}

// ---------------------------------------------------------------- the commit
//
// Phase 3 of a deposit, in named steps: validate_plans, then in one write
// transaction added_since, and per deposit commit_deposit (new_record_conflict
// + create_record, or merge_conflict + merge_into, per statement; then
// link_deposit). The first conflict unwinds the transaction.

CommitResult StoreImpl::commit(const std::vector<DepositPlan>& plans, uint64_t prepared_seq, float min_similarity,
                               const BatchKey* batch, const std::vector<ItemWrite>* items) {
    check_open();
    if (batch) check_batch_key(*batch);
    const std::vector<std::vector<float>> vecs = validate_plans(plans);
    CommitResult res;
    try {
        env_->write([&](MDB_txn* txn) {
            res = CommitResult{};  // the map may grow and this run again
            // Exactly once: the key is checked and recorded inside this transaction.
            if (batch && batch_recorded(txn, db_.batch_keys, batch->key)) {
                res.conflict = true;
                res.why = "the batch key was committed meanwhile";
                throw CommitAbort{};
            }
            const std::vector<Rival> rivals = added_since(txn, prepared_seq);
            Counters c = read_counters(txn);
            std::vector<uint64_t> staged;  // ids of the new records of this commit, in order
            res.ids.resize(plans.size());
            for (size_t p = 0; p < plans.size(); ++p) {
                std::optional<std::string> why =
                    commit_deposit(txn, plans[p], vecs[p].data(), rivals, min_similarity, c, staged, res.ids[p]);
                if (why) {
                    res.conflict = true;
                    res.why = std::move(*why);
                    throw CommitAbort{};
                }
            }
            write_counters(txn, c);
            if (batch) record_batch(txn, db_.batch_keys, batch->key, batch_result_of(*batch, plans, res.ids));
            if (items) {
                std::vector<std::string> owners;
                for (const DepositPlan& d : plans) owners.push_back(d.owner);
                res.unused = forget_private(txn, items_->write(txn, *items, res.ids, owners));
            }
        });
    } catch (const CommitAbort&) {
        return res;
    }
    sync_index();
    return res;
}

namespace {

// The plan's statements as views into it (it must outlive the result).
DepositPlan view_of(const CommitPlan& p, uint32_t dim) {
    size_t n = p.texts.size();
    if (!p.metadata.empty() && p.metadata.size() != n)
        throw InvalidArgument("a commit plan's fields disagree in length");
    if (p.digests.size() != n * kDigestBytes || p.targets.size() != n || p.expected.size() != n || p.kept.size() != n)
        throw InvalidArgument("a commit plan's fields disagree in length");
    if (!p.supersedes.empty() && p.supersedes.size() != n)
        throw InvalidArgument("a commit plan's fields disagree in length");
    if (p.vectors.size() != n * dim)
        throw InvalidArgument("vectors must have shape (" + std::to_string(n) + ", " + std::to_string(dim) + ")");
    DepositPlan d;
    d.owner = p.owner;
    d.round = p.round;
    d.scope = p.scope;
    d.statements.resize(n);
    for (size_t j = 0; j < n; ++j) {
        StatementPlan& s = d.statements[j];
        s.text = p.texts[j];
        s.digest = reinterpret_cast<const unsigned char*>(p.digests.data()) + j * kDigestBytes;
        s.vector = p.vectors.data() + j * dim;
        s.target = p.targets[j];
        s.expected = p.expected[j];
        s.kept = p.kept[j];
        if (!p.metadata.empty()) s.metadata = p.metadata[j];
        if (!p.supersedes.empty()) s.supersedes = p.supersedes[j];
    }
    return d;
}

}  // namespace

CommitResult StoreImpl::commit(const std::vector<CommitPlan>& plans, uint64_t prepared_seq, float min_similarity,
                               const BatchKey* batch, const std::vector<ItemWrite>* items) {
    check_open();
    std::vector<DepositPlan> views;
    views.reserve(plans.size());
    for (const CommitPlan& p : plans) views.push_back(view_of(p, dim_));
    return commit(views, prepared_seq, min_similarity, batch, items);
}

// Checks every plan and normalizes its vectors, before any transaction.
std::vector<std::vector<float>> StoreImpl::validate_plans(const std::vector<DepositPlan>& plans) const {
    std::vector<std::vector<float>> vecs(plans.size());
    size_t new_count = 0;
    for (size_t p = 0; p < plans.size(); ++p) {
        const DepositPlan& d = plans[p];
        if (d.owner.empty() || d.owner.size() > kMaxOwnerBytes)
            throw InvalidArgument("owner must be 1 to " + std::to_string(kMaxOwnerBytes) + " bytes");
        if (has_control(d.owner)) throw InvalidArgument("owner has a control character");
        if (!has_visible(d.owner)) throw InvalidArgument("owner has no visible character");
        if (d.statements.empty() || d.statements.size() > kMaxStatementsPerDeposit)
            throw InvalidArgument("a deposit holds 1 to " + std::to_string(kMaxStatementsPerDeposit) + " statements");
        vecs[p].resize(d.statements.size() * dim_);
        for (size_t i = 0; i < d.statements.size(); ++i) {
            const StatementPlan& s = d.statements[i];
            if (s.text.empty() || s.text.size() > kMaxStatementBytes)
                throw InvalidArgument("statement must be 1 to " + std::to_string(kMaxStatementBytes) + " bytes");
            if (!has_visible(s.text)) throw InvalidArgument("statement has no visible character");
            if (s.target != 0 && !has_visible(s.kept)) throw InvalidArgument("kept text has no visible character");
            prepare_vector(s.vector, vecs[p].data() + i * dim_);
            if (s.target < 0 && static_cast<size_t>(-s.target) > new_count)
                throw InvalidArgument("a merge names a new record that comes later in the commit");
            if (s.target != 0 && s.kept.empty()) throw InvalidArgument("a merge needs the kept text");
            if (s.kept.size() > kMaxStatementBytes) throw InvalidArgument("kept text is too long");
            if (s.supersedes != 0 && s.target != 0) throw InvalidArgument("only a new record supersedes another");
            if (s.supersedes < 0 && static_cast<size_t>(-s.supersedes) > new_count)
                throw InvalidArgument("a supersession names a new record that comes later in the commit");
            if (s.target == 0) ++new_count;
            std::string why;
            if (!s.metadata.empty() && !valid_metadata(s.metadata, why)) throw InvalidArgument(why);
        }
    }
    return vecs;
}

// The records other writers added after prepared_seq (and still hold), with
// their vectors: a new record of this commit must not be similar to one.
std::vector<StoreImpl::Rival> StoreImpl::added_since(MDB_txn* txn, uint64_t prepared_seq) {
    std::vector<Rival> added;
    if (journal_end(txn) <= prepared_seq) return added;
    Cursor c(txn, db_.journal);
    Be64 from(prepared_seq + 1);
    MDB_val k = val(from.b, 8), v;
    bool more = c.op(k, v, MDB_SET_RANGE);
    while (more) {
        JournalEntry e;
        if (decode_journal(v, e) && e.op == kAdd) {
            std::vector<float> buf(dim_);
            if (vector_of(txn, e.record, buf.data()))
                added.push_back(Rival{e.record, std::move(buf), record_scope(txn, e.record)});
        }
        more = c.op(k, v, MDB_NEXT);
    }
    return added;
}

// One deposit's statements, in order; ids gets the record each ends in. The
// four conflicts, each a decision prepare saw made stale by another writer:
// a new record whose text (new_record_conflict: identical) or meaning
// (similar) was committed meanwhile, and a merge whose survivor was deleted
// or changed meanwhile (merge_conflict), or a new record whose predecessor
// (supersedes) was deleted meanwhile.
std::optional<std::string> StoreImpl::commit_deposit(MDB_txn* txn, const DepositPlan& d, const float* vectors,
                                                     const std::vector<Rival>& rivals, float min_similarity,
                                                     Counters& c, std::vector<uint64_t>& staged,
                                                     std::vector<uint64_t>& ids) {
    uint32_t oid = ensure_owner(txn, d.owner);
    const uint32_t sid = ensure_scope(txn, d.scope);
    ++c.deposits;
    for (size_t i = 0; i < d.statements.size(); ++i) {
        const StatementPlan& s = d.statements[i];
        const float* v = vectors + i * dim_;
        uint64_t id;
        if (s.target == 0) {
            if (auto why = new_record_conflict(txn, s, v, rivals, min_similarity, sid)) return why;
            id = c.next_id++;
            put_scope(txn, id, sid);  // first: the record's words are kept under its scope
            create_record(txn, id, s, v, oid, d.round, c.deposits);
            staged.push_back(id);
            if (s.supersedes != 0) {
                const uint64_t old = s.supersedes > 0 ? static_cast<uint64_t>(s.supersedes) : staged[-s.supersedes - 1];
                Be64 ok(old);
                MDB_val probe;
                if (!agentsensus::get(txn, db_.records, val(ok.b, 8), probe))
                    return "record " + std::to_string(old) + " was deleted meanwhile";
                // Enforced here whatever the plan says: a chain stays in one scope.
                if (record_scope(txn, old) != sid)
                    throw InvalidArgument("statement " + std::to_string(i) + " supersedes record " +
                                          std::to_string(old) + ", which is in another scope");
                supersede(txn, old, id);
            }
        } else {
            id = s.target > 0 ? static_cast<uint64_t>(s.target) : staged[-s.target - 1];
            if (auto why = merge_conflict(txn, id, s)) return why;
            // Enforced here whatever the plan says: no merge across scopes.
            if (record_scope(txn, id) != sid)
                throw InvalidArgument("statement " + std::to_string(i) + " names record " + std::to_string(id) +
                                      ", which is in another scope");
            merge_into(txn, id, s, v, oid, d.round, c.next_merge);
        }
        ids.push_back(id);
    }
    link_deposit(txn, ids);
    return std::nullopt;
}

std::optional<std::string> StoreImpl::new_record_conflict(MDB_txn* txn, const StatementPlan& s, const float* v,
                                                          const std::vector<Rival>& rivals, float min_similarity,
                                                          uint32_t scope) {
    MDB_val cur;
    if (agentsensus::get(txn, db_.norms, val(s.digest, kDigestBytes), cur)) {
        // Digests are keyed by scope (normalize.py): one of another scope
        // means the caller gave an unscoped digest.
        if (cur.mv_size == 8 && record_scope(txn, read_be64(cur.mv_data)) != scope)
            throw InvalidArgument("a statement's text digest is another scope's: digests must be keyed by scope");
        return "an identical statement committed meanwhile";
    }
    for (const Rival& r : rivals)
        if (r.scope == scope && similarity(metric_, v, r.vector.data(), dim_) >= min_similarity)
            return "a similar record committed meanwhile";
    return std::nullopt;
}

// A statement becomes record id, owned by its depositor.
void StoreImpl::create_record(MDB_txn* txn, uint64_t id, const StatementPlan& s, const float* v, uint32_t oid,
                              uint32_t round, uint64_t deposit) {
    Be64 k(id);
    put(txn, db_.records, val(k.b, 8), val(encode_record(round, deposit, s.text)), MDB_APPEND);
    put(txn, db_.vectors, val(k.b, 8), val(v, dim_ * sizeof(float)), MDB_APPEND);
    add_digest(txn, id, val(s.digest, kDigestBytes));
    add_owner(txn, id, oid);
    put_said(txn, id, 0, oid, round, nullptr, {});  // its text is the record's (see retext_said)
    lexical_->add(txn, id, s.text);
    stamp_times(txn, id, true);
    if (!s.metadata.empty()) put_metadata(txn, id, oid, s.metadata);
    journal(txn, kAdd, id, oid);
}

// A merge into a committed record (target > 0) is stale when the record is
// gone or its text is not the one the caller's policy saw; one into a record
// of this commit (target < 0) cannot be.
std::optional<std::string> StoreImpl::merge_conflict(MDB_txn* txn, uint64_t id, const StatementPlan& s) {
    Be64 k(id);
    MDB_val rv;
    if (!agentsensus::get(txn, db_.records, val(k.b, 8), rv))
        return "record " + std::to_string(id) + " was deleted meanwhile";
    RecordHeader h;
    std::string_view current;
    if (!decode_record(rv, h, current)) throw Corrupt("record " + std::to_string(id) + " is damaged");
    if (s.target > 0 && current != s.expected) return "record " + std::to_string(id) + " changed meanwhile";
    return std::nullopt;
}

// The merge: record id takes the kept text, the merge log what was let go
// of, the owner set the depositor, and the text index the statement's digest.
void StoreImpl::merge_into(MDB_txn* txn, uint64_t id, const StatementPlan& s, const float* v, uint32_t oid,
                           uint32_t round, uint64_t& next_merge) {
    Be64 k(id);
    MDB_val rv;
    RecordHeader h;
    std::string_view current;
    if (!agentsensus::get(txn, db_.records, val(k.b, 8), rv) || !decode_record(rv, h, current))
        throw Corrupt("record " + std::to_string(id) + " is damaged");
    const std::string before(current);
    auto row0 = said_key(id, 0);
    MDB_val probe;
    const bool rows = agentsensus::get(txn, db_.said, val(row0.data(), row0.size()), probe);
    if (s.kept != before) {
        if (rows) retext_said(txn, id, s.kept);  // reads the text before: first
        put(txn, db_.records, val(k.b, 8), val(encode_record(h.round, h.deposit, s.kept)));
        lexical_->retext(txn, id, before, s.kept);
    }
    // Log what the merge let go of: the statement, the old text, or (a custom
    // policy that wrote new text) both.
    std::vector<std::string_view> dropped;
    if (s.kept == before) {
        dropped.push_back(s.text);
    } else {
        dropped.push_back(before);
        if (s.kept != s.text) dropped.push_back(s.text);
    }
    // The statement itself, with its vector, joins the record's said rows
    // (a schema-1 record, without row 0, stays without rows).
    if (rows) put_said(txn, id, next_merge, oid, round, v, s.text == s.kept ? std::string_view() : s.text);
    for (std::string_view disc : dropped) put_merge(txn, next_merge++, id, oid, round, s.kept, disc);
    if (add_owner(txn, id, oid)) journal(txn, kOwn, id, oid);
    stamp_times(txn, id, false);
    if (!s.metadata.empty()) put_metadata(txn, id, oid, s.metadata);  // the depositor's own row only
    MDB_val cur;
    MDB_val digest = val(s.digest, kDigestBytes);
    if (!agentsensus::get(txn, db_.norms, digest, cur)) add_digest(txn, id, digest);
}

// Affiliation: the records one deposit ended in, pairwise.
void StoreImpl::link_deposit(MDB_txn* txn, const std::vector<uint64_t>& ids) {
    std::vector<uint64_t> distinct(ids);
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    for (size_t a = 0; a < distinct.size(); ++a)
        for (size_t b = a + 1; b < distinct.size(); ++b) add_edge(txn, distinct[a], distinct[b]);
}

}  // namespace agentsensus
