// Lineage's implementation behind Lineage (agentsensus/lineage.hpp): the
// same methods over the lineage tables, in the files lineage*.cpp named for
// each concern.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agentsensus/heads_codec.hpp"
#include "agentsensus/lineage.hpp"
#include "lmdb/lmdb_env.hpp"

namespace agentsensus {

class LineageImpl {
public:
    // Opens (or, in a writable store, creates) the lineage tables. Call right
    // after the store opens, before other threads use it. In a read-only
    // store without lineage tables the lineage is empty.
    explicit LineageImpl(Env& env);

    // Applies ops in order in one write transaction and returns each op's
    // version. commit=false validates and numbers them, then rolls back.
    // Any failure leaves the lineage unchanged.
    std::vector<uint64_t> apply(const std::vector<LineageOp>& ops, bool commit);

    KeyInfo info(std::string_view key);                         // NotFound when unknown
    std::string value(std::string_view key, uint64_t version);  // version 0: the head
    std::vector<std::string> keys();                            // every key, sorted
    std::vector<VersionRow> versions(std::string_view key);     // every recorded version, ascending

    // Every link reachable from key's head, cut to scope (nullptr: all),
    // sorted by owner, key, version.
    std::vector<LinkRow> frontier(std::string_view key, const Scope* scope);

    PreparedCheck prepare(std::string_view key, const Scope* scope);
    // Every key at its head, as all-key validation would ask.
    PreparedCheck prepare_all();
    // The owner's side: answers a query from this store's heads. Keys this
    // store does not know, or that another owner owns, are answered unknown.
    // Throws InvalidArgument on a malformed query.
    std::string answer(std::string_view owner, std::string_view query);
    // answers[i] is group i's answer, or nullptr if the owner gave none.
    CheckResult finish(const PreparedCheck& p, const std::vector<const std::string*>& answers);
    // prepare + answer from this store + finish on one snapshot.
    CheckResult check_local(std::string_view key, const Scope* scope);

    // Every broken lineage invariant in plain words (heads against their
    // versions, owners, links); empty when sound.
    std::vector<std::string> verify();

private:
    struct KeyRec {
        uint32_t id;
        uint32_t owner;
        uint64_t head;
    };
    struct Dbs {
        MDB_dbi keys, owners, versions, values, meta;
    };

    // A frontier link read in place: key (and the owner names of Grouped)
    // point into the read transaction's pages, valid while it lives.
    struct Link {
        std::string_view key;
        uint64_t version;
        ValueDigest digest;
        uint32_t owner;  // index into Reached::owner_ids, then Grouped::owners
        bool derived;
    };
    // What the walk reaches, in walk order: in-scope links, possibly
    // repeated (one input reached along two paths), and the owner ids in the
    // order they were met.
    struct Reached {
        std::vector<Link> links;
        std::vector<uint32_t> owner_ids;
    };
    // A frontier grouped by owner: owners sorted by name, links of owner i
    // at [starts[i], starts[i + 1]), sorted by key, version, and distinct.
    struct Grouped {
        std::vector<Link> links;
        std::vector<std::string_view> owners;
        std::vector<size_t> starts;
    };

    std::optional<KeyRec> key_rec(MDB_txn* txn, std::string_view key);
    std::optional<uint32_t> owner_id(MDB_txn* txn, std::string_view owner);
    std::string_view owner_name(MDB_txn* txn, uint32_t id);
    bool version_digest(MDB_txn* txn, uint32_t key, uint64_t version, ValueDigest& out);
    // The frontier in two steps: walk (every link reachable from key's head
    // through derived inputs, cut to scope; NotFound for an unknown key),
    // then group_by_owner (rank the owners by name, bucket the links by
    // rank, sort each bucket, drop duplicates).
    void walk(MDB_txn* txn, std::string_view key, const Scope* scope, Reached& out);
    void group_by_owner(MDB_txn* txn, Reached& r, Grouped& out);
    void walk_grouped(MDB_txn* txn, std::string_view key, const Scope* scope, Grouped& out);
    // Ranks of owner_ids by name (equal names share a rank); names_out gets
    // the distinct names in rank order.
    std::vector<uint32_t> rank_owners(MDB_txn* txn, const std::vector<uint32_t>& ids,
                                      std::vector<std::string_view>& names_out);
    static bool sort_within_owners(Grouped& g);
    static void drop_duplicates(Grouped& g);
    // LinkRows sorted by owner (as frontier returns them) into one encoded
    // query per owner.
    PreparedCheck group(std::vector<LinkRow> links);
    // One owner's decoded head query and, after answer_in, its answers.
    // keys point into key_bytes (inline for short keys): decode in place and
    // do not move an Ask after.
    struct Ask {
        std::string_view owner;
        std::optional<uint32_t> owner_id;
        std::vector<QueryEntry> entries;
        std::string key_bytes;               // the keys, rebuilt
        std::vector<std::string_view> keys;  // into key_bytes
        std::vector<HeadAnswer> heads;
        void decode(std::string_view query);  // throws InvalidArgument when malformed
    };
    void answer_in(MDB_txn* txn, std::vector<Ask>& asks);
    uint64_t apply_one(MDB_txn* txn, const LineageOp& op);
    uint32_t ensure_owner(MDB_txn* txn, std::string_view owner);
    uint64_t next_counter(MDB_txn* txn, const char* name);

    Env& env_;
    Dbs db_{};
    bool present_ = false;
};

}  // namespace agentsensus
