#include "store/item_table.hpp"

#include <algorithm>
#include <cstring>
#include <map>

#include "agentsensus/errors.hpp"
#include "format/bytes.hpp"
#include "format/schema.hpp"

namespace agentsensus {

namespace {

// The item row's value (kItemsTable): [i64 created_us][i64 updated_us]
// [u32 n] n x ([u32 owner id][u64 record]) then the JSON text (native).
constexpr size_t kItemHeader = 8 + 8 + 4;
constexpr size_t kItemRef = 4 + 8;

struct RawRef {
    uint32_t owner;
    uint64_t record;
    bool operator<(const RawRef& o) const { return owner < o.owner || (owner == o.owner && record < o.record); }
    bool operator==(const RawRef& o) const { return owner == o.owner && record == o.record; }
};

struct RawItem {
    int64_t created = 0, updated = 0;
    std::vector<RawRef> refs;
    std::string_view value;
};

std::string encode_item(int64_t created, int64_t updated, const std::vector<RawRef>& refs, std::string_view value) {
    std::string v;
    v.reserve(kItemHeader + refs.size() * kItemRef + value.size());
    append<int64_t>(v, created);
    append<int64_t>(v, updated);
    append<uint32_t>(v, static_cast<uint32_t>(refs.size()));
    for (const RawRef& r : refs) {
        append<uint32_t>(v, r.owner);
        append<uint64_t>(v, r.record);
    }
    v.append(value);
    return v;
}

// False when the value is too short for its header or its refs.
bool decode_item(const MDB_val& v, RawItem& out) {
    Reader r(v.mv_data, v.mv_size);
    uint32_t n = 0;
    if (!r.get(out.created) || !r.get(out.updated) || !r.get(n)) return false;
    if (n > (v.mv_size - kItemHeader) / kItemRef) return false;
    out.refs.resize(n);
    for (RawRef& ref : out.refs)
        if (!r.get(ref.owner) || !r.get(ref.record)) return false;
    out.value = r.rest();
    return true;
}

// The reverse index's key: [Be64 record][Be32 owner].
std::string ref_key(uint64_t record, uint32_t owner) {
    Be64 r(record);
    Be32 o(owner);
    std::string k(reinterpret_cast<const char*>(r.b), 8);
    k.append(reinterpret_cast<const char*>(o.b), 4);
    return k;
}

// An item key splits at its first zero byte: labels hold none, a key may.
bool split_key(const MDB_val& k, std::string_view& ns, std::string_view& key) {
    std::string_view s = view(k);
    size_t z = s.find('\0');
    if (z == std::string_view::npos) return false;
    ns = s.substr(0, z);
    key = s.substr(z + 1);
    return true;
}

bool under_prefix(std::string_view ns, std::string_view prefix) {
    if (prefix.empty()) return true;
    if (ns.size() < prefix.size() || ns.compare(0, prefix.size(), prefix) != 0) return false;
    return ns.size() == prefix.size() || ns[prefix.size()] == '.';
}

MDB_dbi open_optional(Env& env, const TableSpec& t, bool& present) {
    try {
        return env.open_db(t.name, t.flags);
    } catch (const Corrupt&) {
        if (!env.readonly()) throw;
        present = false;  // a store from before the table, opened read-only
        return 0;
    }
}

}  // namespace

ItemTable::ItemTable(Env& env) {
    items_ = open_optional(env, kItemsTable, present_);
    if (present_) refs_ = open_optional(env, kItemRefsTable, present_);
    owners_ = env.open_db(kOwnersTable.name, kOwnersTable.flags);
    owners_by_name_ = env.open_db(kOwnersByNameTable.name, kOwnersByNameTable.flags);
    owner_names_ = env.open_db(kOwnerNamesTable.name, kOwnerNamesTable.flags);
    max_key_ = static_cast<size_t>(mdb_env_get_maxkeysize(env.raw()));
}

std::string ItemTable::item_key(std::string_view ns, std::string_view key) const {
    if (ns.empty()) throw InvalidArgument("an item's namespace must not be empty");
    if (ns.find('\0') != std::string_view::npos) throw InvalidArgument("a namespace label has a zero character");
    std::string k(ns);
    k.push_back('\0');
    k.append(key);
    if (k.size() > max_key_)
        throw InvalidArgument("an item's namespace and key take " + std::to_string(k.size() - 1) +
                              " bytes; together they may take at most " + std::to_string(max_key_ - 1));
    return k;
}

std::optional<uint32_t> ItemTable::owner_id(MDB_txn* txn, std::string_view name) {
    MDB_val v;
    if (!agentsensus::get(txn, owners_by_name_, val(name), v) || v.mv_size != 4) return std::nullopt;
    return load<uint32_t>(v.mv_data);
}

std::string ItemTable::owner_name(MDB_txn* txn, uint32_t id) {
    Be32 k(id);
    MDB_val v;
    if (!agentsensus::get(txn, owner_names_, val(k.b, 4), v))
        throw Corrupt("an item names owner id " + std::to_string(id) + ", which has no name");
    return std::string(view(v));
}

bool ItemTable::owns(MDB_txn* txn, uint64_t record, uint32_t owner) {
    Be64 k(record);
    MDB_val key = val(k.b, 8), v = val(&owner, 4);
    Cursor c(txn, owners_);
    return c.op(key, v, MDB_GET_BOTH);
}

ItemRow ItemTable::to_row(MDB_txn* txn, const MDB_val& k, const MDB_val& v) {
    std::string_view ns, key;
    RawItem it;
    if (!split_key(k, ns, key) || !decode_item(v, it)) throw Corrupt("an item row is damaged");
    ItemRow row{std::string(ns), std::string(key), std::string(it.value), it.created, it.updated, {}};
    for (const RawRef& r : it.refs) row.refs.push_back(ItemRef{owner_name(txn, r.owner), r.record});
    return row;
}

std::vector<ItemRef> ItemTable::write(MDB_txn* txn, const std::vector<ItemWrite>& writes,
                                      const std::vector<std::vector<uint64_t>>& deposit_ids,
                                      const std::vector<std::string>& deposit_owners) {
    if (!present_) throw Error("this store has no item tables (open it writable once to add them)");
    std::set<RawRef> released;  // refs old rows held
    for (const ItemWrite& w : writes) {
        const std::string k = item_key(w.ns, w.key);
        std::vector<RawRef> refs;
        for (const ItemRef& r : w.refs) {
            auto oid = owner_id(txn, r.owner);
            if (!oid || !owns(txn, r.record, *oid))
                throw InvalidArgument("item " + w.ns + " " + w.key + " names record " + std::to_string(r.record) +
                                      ", which '" + r.owner + "' does not own");
            refs.push_back(RawRef{*oid, r.record});
        }
        if (w.deposit >= 0) {
            size_t d = static_cast<size_t>(w.deposit);
            if (d >= deposit_ids.size() || d >= deposit_owners.size())
                throw InvalidArgument("an item write names a deposit the commit does not hold");
            auto oid = owner_id(txn, deposit_owners[d]);
            if (!oid) throw InvalidArgument("an item write names a deposit of an unknown owner");
            for (uint64_t id : deposit_ids[d]) refs.push_back(RawRef{*oid, id});
        }
        std::sort(refs.begin(), refs.end());
        refs.erase(std::unique(refs.begin(), refs.end()), refs.end());

        int64_t created = w.created_us >= 0 ? w.created_us : w.updated_us;
        MDB_val old;
        if (agentsensus::get(txn, items_, val(k), old)) {
            RawItem it;
            if (!decode_item(old, it)) throw Corrupt("item " + w.ns + " " + w.key + " is damaged");
            if (w.created_us < 0) created = it.created;
            for (const RawRef& r : it.refs) {
                released.insert(r);
                MDB_val kv = val(k);
                del(txn, refs_, val(ref_key(r.record, r.owner)), &kv);
            }
        }
        if (w.remove) {
            del(txn, items_, val(k));
            continue;
        }
        put(txn, items_, val(k), val(encode_item(created, w.updated_us, refs, w.value)));
        for (const RawRef& r : refs) put(txn, refs_, val(ref_key(r.record, r.owner)), val(k));
    }
    std::vector<ItemRef> unused;
    for (const RawRef& r : released) {
        MDB_val v;
        if (!agentsensus::get(txn, refs_, val(ref_key(r.record, r.owner)), v))
            unused.push_back(ItemRef{owner_name(txn, r.owner), r.record});
    }
    return unused;
}

std::optional<ItemRow> ItemTable::get(Env& env, std::string_view ns, std::string_view key) {
    if (!present_) return std::nullopt;
    const std::string k = item_key(ns, key);
    ReadTxn t(env);
    MDB_val v;
    if (!agentsensus::get(t.get(), items_, val(k), v)) return std::nullopt;
    return to_row(t.get(), val(k), v);
}

std::vector<ItemRow> ItemTable::under(Env& env, std::string_view prefix) {
    std::vector<ItemRow> out;
    if (!present_) return out;
    ReadTxn t(env);
    Cursor c(t.get(), items_);
    MDB_val k = val(prefix), v;
    // Keys sort by namespace: those under prefix start with it, and the ones
    // that continue it with another character ('-' sorts before '.') are skipped.
    bool more = prefix.empty() ? c.op(k, v, MDB_FIRST) : c.op(k, v, MDB_SET_RANGE);
    while (more) {
        std::string_view s = view(k);
        if (!prefix.empty() && (s.size() < prefix.size() || s.compare(0, prefix.size(), prefix) != 0)) break;
        std::string_view ns, key;
        if (split_key(k, ns, key) && under_prefix(ns, prefix)) out.push_back(to_row(t.get(), k, v));
        more = c.op(k, v, MDB_NEXT);
    }
    return out;
}

std::vector<std::string> ItemTable::namespaces(Env& env) {
    std::vector<std::string> out;
    if (!present_) return out;
    ReadTxn t(env);
    Cursor c(t.get(), items_);
    MDB_val k, v;
    bool more = c.op(k, v, MDB_FIRST);
    while (more) {
        std::string_view ns, key;
        if (split_key(k, ns, key) && (out.empty() || out.back() != ns)) out.emplace_back(ns);
        more = c.op(k, v, MDB_NEXT);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

std::vector<std::pair<uint64_t, ItemRow>> ItemTable::items_of(Env& env, const std::string& owner,
                                                              const std::vector<uint64_t>& records) {
    std::vector<std::pair<uint64_t, ItemRow>> out;
    if (!present_) return out;
    ReadTxn t(env);
    auto oid = owner_id(t.get(), owner);
    if (!oid) return out;
    Cursor c(t.get(), refs_);
    for (uint64_t id : records) {
        std::string rk = ref_key(id, *oid);
        MDB_val k = val(rk), v;
        bool more = c.op(k, v, MDB_SET);
        if (more) more = c.op(k, v, MDB_FIRST_DUP);
        while (more) {
            MDB_val row;
            if (!agentsensus::get(t.get(), items_, v, row)) throw Corrupt("the item index names a missing item");
            out.emplace_back(id, to_row(t.get(), v, row));
            more = c.op(k, v, MDB_NEXT_DUP);
        }
    }
    return out;
}

std::vector<ItemRow> ItemTable::page(Env& env, const std::string& after_ns, const std::string& after_key,
                                     size_t limit) {
    std::vector<ItemRow> out;
    if (!present_) return out;
    ReadTxn t(env);
    Cursor c(t.get(), items_);
    std::string from;
    MDB_val k, v;
    bool more;
    if (after_ns.empty()) {
        more = c.op(k, v, MDB_FIRST);
    } else {
        from = after_ns + '\0' + after_key;
        k = val(from);
        more = c.op(k, v, MDB_SET_RANGE);
        if (more && view(k) == from) more = c.op(k, v, MDB_NEXT);
    }
    while (more && out.size() < limit) {
        out.push_back(to_row(t.get(), k, v));
        more = c.op(k, v, MDB_NEXT);
    }
    return out;
}

size_t ItemTable::count(Env& env) {
    if (!present_) return 0;
    ReadTxn t(env);
    return entries(t.get(), items_);
}

void ItemTable::drop_refs(MDB_txn* txn, uint64_t record, uint32_t owner) {
    if (!present_) return;
    const std::string rk = ref_key(record, owner);
    std::vector<std::string> keys;
    {
        Cursor c(txn, refs_);
        MDB_val k = val(rk), v;
        bool more = c.op(k, v, MDB_SET);
        if (more) more = c.op(k, v, MDB_FIRST_DUP);
        while (more) {
            keys.emplace_back(view(v));
            more = c.op(k, v, MDB_NEXT_DUP);
        }
    }
    for (const std::string& key : keys) {
        MDB_val row;
        RawItem it;
        if (!agentsensus::get(txn, items_, val(key), row)) continue;
        if (!decode_item(row, it)) throw Corrupt("an item row is damaged");
        std::vector<RawRef> kept;
        for (const RawRef& r : it.refs)
            if (!(r.owner == owner && r.record == record)) kept.push_back(r);
        const std::string value(it.value);
        put(txn, items_, val(key), val(encode_item(it.created, it.updated, kept, value)));
    }
    del(txn, refs_, val(rk));
}

// I15: every item row has a namespace, decodes, and each ref names a record
// in the owner set of a known owner and is in the reverse index; every
// reverse entry names an item row that lists it.
void ItemTable::verify(MDB_txn* txn, const std::function<void(std::string)>& bad) {
    if (!present_) return;
    std::set<std::pair<std::string, std::string>> listed;  // (ref key, item key) the rows list
    Cursor c(txn, items_);
    MDB_val k, v;
    bool more = c.op(k, v, MDB_FIRST);
    while (more) {
        std::string_view ns, key;
        RawItem it;
        const std::string item(view(k));
        if (!split_key(k, ns, key) || ns.empty()) {
            bad("an item key is damaged (no namespace)");
        } else if (!decode_item(v, it)) {
            bad("item " + std::string(ns) + " " + std::string(key) + " is damaged");
        } else {
            for (const RawRef& r : it.refs) {
                Be32 ok(r.owner);
                MDB_val name;
                const std::string what = "item " + std::string(ns) + " " + std::string(key);
                if (!agentsensus::get(txn, owner_names_, val(ok.b, 4), name))
                    bad(what + " names unknown owner id " + std::to_string(r.owner));
                else if (!owns(txn, r.record, r.owner))
                    bad(what + " names record " + std::to_string(r.record) + ", which '" + std::string(view(name)) +
                        "' does not own");
                listed.emplace(ref_key(r.record, r.owner), item);
                Cursor rc(txn, refs_);
                std::string rk = ref_key(r.record, r.owner);
                MDB_val kk = val(rk), vv = val(item);
                if (!rc.op(kk, vv, MDB_GET_BOTH)) bad(what + " is missing from the item index");
            }
        }
        more = c.op(k, v, MDB_NEXT);
    }
    Cursor rc(txn, refs_);
    more = rc.op(k, v, MDB_FIRST);
    while (more) {
        if (k.mv_size != 12 || !listed.count({std::string(view(k)), std::string(view(v))}))
            bad("an item index entry names an item that does not use that record");
        more = rc.op(k, v, MDB_NEXT);
    }
}

void ItemTable::repair(MDB_txn* txn) {
    if (!present_) return;
    std::map<std::string, std::string> rows;  // rewritten item rows
    {
        Cursor c(txn, items_);
        MDB_val k, v;
        bool more = c.op(k, v, MDB_FIRST);
        while (more) {
            std::string_view ns, key;
            RawItem it;
            if (split_key(k, ns, key) && !ns.empty() && decode_item(v, it)) {
                std::vector<RawRef> kept;
                for (const RawRef& r : it.refs)
                    if (owns(txn, r.record, r.owner)) kept.push_back(r);
                rows.emplace(std::string(view(k)), encode_item(it.created, it.updated, kept, it.value));
            }
            more = c.op(k, v, MDB_NEXT);
        }
    }
    int rc = mdb_drop(txn, items_, 0);
    if (rc) throw_lmdb(rc, "mdb_drop");
    rc = mdb_drop(txn, refs_, 0);
    if (rc) throw_lmdb(rc, "mdb_drop");
    for (auto& [k, v] : rows) {
        put(txn, items_, val(k), val(v), MDB_APPEND);
        RawItem it;
        decode_item(val(v), it);
        for (const RawRef& r : it.refs) put(txn, refs_, val(ref_key(r.record, r.owner)), val(k));
    }
}

}  // namespace agentsensus
