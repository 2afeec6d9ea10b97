// The key-value items of a LangGraph store (integrations/langgraph.py) in the
// store's own environment: one row per (namespace, key) with its JSON value,
// timestamps and the records its indexed texts ended in, and the reverse
// index from a (record, owner) back to the items that use it. An item write
// may ride in a deposit's commit (Store::commit), so a put that indexes
// texts is one transaction: the records and the item that points at them.
#pragma once
#include <lmdb.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "agentsensus/rows.hpp"
#include "lmdb/lmdb_env.hpp"

namespace agentsensus {

class ItemTable {
public:
    // Opens the item tables (and, for lookups, the owner tables) of env;
    // called while no other transaction runs. A read-only open of a store
    // that predates them has no items (present() false).
    explicit ItemTable(Env& env);
    bool present() const { return present_; }

    // Applies the writes inside txn, in order. deposit_ids/deposit_owners:
    // the commit's result, for writes that name a deposit. Returns the
    // (owner, record) pairs that an old row used and no item uses any more
    // (the caller lets the owner forget them). Throws InvalidArgument for a
    // bad name, a key too long, or a ref to a record its owner does not own.
    std::vector<ItemRef> write(MDB_txn* txn, const std::vector<ItemWrite>& writes,
                               const std::vector<std::vector<uint64_t>>& deposit_ids,
                               const std::vector<std::string>& deposit_owners);

    std::optional<ItemRow> get(Env& env, std::string_view ns, std::string_view key);
    // Items whose namespace is prefix or continues it ("" for all), key order.
    std::vector<ItemRow> under(Env& env, std::string_view prefix);
    // Every namespace holding an item, sorted.
    std::vector<std::string> namespaces(Env& env);
    // For each record, the items that use it for owner: (record, item) pairs.
    std::vector<std::pair<uint64_t, ItemRow>> items_of(Env& env, const std::string& owner,
                                                       const std::vector<uint64_t>& records);
    // Items in key order after (after_ns, after_key) (both empty: from the first), at most limit.
    std::vector<ItemRow> page(Env& env, const std::string& after_ns, const std::string& after_key, size_t limit);
    size_t count(Env& env);

    // Store::forget's hook, inside its transaction: owner left the record, so
    // the items of owner let go of it.
    void drop_refs(MDB_txn* txn, uint64_t record, uint32_t owner);
    // I15 (Store::verify).
    void verify(MDB_txn* txn, const std::function<void(std::string)>& bad);
    // Store::repair's step: rows that do not decode go, refs keep only
    // (record, owner) pairs of the owner sets, and the reverse index is rebuilt.
    void repair(MDB_txn* txn);

private:
    std::string item_key(std::string_view ns, std::string_view key) const;
    std::optional<uint32_t> owner_id(MDB_txn* txn, std::string_view name);
    std::string owner_name(MDB_txn* txn, uint32_t id);
    bool owns(MDB_txn* txn, uint64_t record, uint32_t owner);
    ItemRow to_row(MDB_txn* txn, const MDB_val& k, const MDB_val& v);

    bool present_ = true;
    size_t max_key_ = 511;
    MDB_dbi items_ = 0, refs_ = 0;
    MDB_dbi owners_ = 0, owners_by_name_ = 0, owner_names_ = 0;  // the store's, read only here
};

}  // namespace agentsensus
