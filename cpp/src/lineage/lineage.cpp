// Lineage's tables: the open, the lookups of keys, owners and versions, and
// the writes (publish, derive, observe, restore; a dry run rolls back).
#include "lineage/lineage.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <unordered_map>

#include "agentsensus/errors.hpp"
#include "agentsensus/limits.hpp"
#include "format/bytes.hpp"
#include "format/schema.hpp"
#include "lineage/lineage_format.hpp"

namespace agentsensus {

using namespace lineage_format;

// ------------------------------------------------------------------- opening

LineageImpl::LineageImpl(Env& env) : env_(env) {
    if (!env.readonly()) {
        db_.keys = env.open_db(kKeys, 0);
        db_.owners = env.open_db(kOwners, 0);
        db_.versions = env.open_db(kVersions, 0);
        db_.values = env.open_db(kValues, 0);
        db_.meta = env.open_db(kMeta, 0);
        present_ = true;
        return;
    }
    // Read-only: a store that never had lineage has no tables, and that is
    // an empty lineage, not an error (Env::open_db would call it corrupt).
    for (;;) {
        std::shared_lock<std::shared_mutex> lock(env.resize_mutex());
        MDB_txn* txn = nullptr;
        int rc = mdb_txn_begin(env.raw(), nullptr, MDB_RDONLY, &txn);
        if (rc == MDB_MAP_RESIZED) {
            lock.unlock();
            env.adopt_resize();
            continue;
        }
        if (rc) throw_lmdb(rc, "mdb_txn_begin(lineage)");
        MDB_dbi probe;
        rc = mdb_dbi_open(txn, kKeys, 0, &probe);
        mdb_txn_abort(txn);
        if (rc == MDB_NOTFOUND) return;
        if (rc) throw_lmdb(rc, "mdb_dbi_open(lin_keys)");
        break;
    }
    db_.keys = env.open_db(kKeys, 0);
    db_.owners = env.open_db(kOwners, 0);
    db_.versions = env.open_db(kVersions, 0);
    db_.values = env.open_db(kValues, 0);
    db_.meta = env.open_db(kMeta, 0);
    present_ = true;
}

// ------------------------------------------------------------------- lookups

std::optional<LineageImpl::KeyRec> LineageImpl::key_rec(MDB_txn* txn, std::string_view key) {
    if (!present_) return std::nullopt;
    MDB_val v;
    if (!get(txn, db_.keys, val(key), v)) return std::nullopt;
    if (v.mv_size != sizeof(KeyRec)) throw Corrupt("lineage key " + quoted(key) + " has a damaged record");
    return load<KeyRec>(v.mv_data);
}

std::optional<uint32_t> LineageImpl::owner_id(MDB_txn* txn, std::string_view owner) {
    if (!present_) return std::nullopt;
    char k[1 + kMaxOwnerBytes];                              // no allocation: a check asks once per owner
    if (owner.size() > kMaxOwnerBytes) return std::nullopt;  // longer names are never stored
    k[0] = 'n';
    std::memcpy(k + 1, owner.data(), owner.size());
    MDB_val v;
    if (!get(txn, db_.owners, val(k, 1 + owner.size()), v)) return std::nullopt;
    if (v.mv_size != 4) throw Corrupt("lineage owner " + quoted(owner) + " has a damaged record");
    return load<uint32_t>(v.mv_data);
}

std::string_view LineageImpl::owner_name(MDB_txn* txn, uint32_t id) {
    unsigned char k[5] = {'i'};
    Be32 b(id);
    std::memcpy(k + 1, b.b, 4);
    MDB_val v;
    if (!get(txn, db_.owners, val(k, 5), v)) throw Corrupt("lineage owner id " + std::to_string(id) + " is missing");
    return view(v);
}

bool LineageImpl::version_digest(MDB_txn* txn, uint32_t key, uint64_t version, ValueDigest& out) {
    MDB_val v;
    if (!get(txn, db_.versions, VersionKey(key, version).mv(), v)) return false;
    if (v.mv_size < kValueDigestBytes) throw Corrupt("a lineage version record is truncated");
    std::memcpy(out.data(), v.mv_data, kValueDigestBytes);
    return true;
}

KeyInfo LineageImpl::info(std::string_view key) {
    ReadTxn t(env_);
    auto rec = key_rec(t.get(), key);
    if (!rec) throw NotFound("no lineage key " + quoted(key));
    return KeyInfo{std::string(owner_name(t.get(), rec->owner)), rec->head};
}

std::string LineageImpl::value(std::string_view key, uint64_t version) {
    ReadTxn t(env_);
    auto rec = key_rec(t.get(), key);
    if (!rec) throw NotFound("no lineage key " + quoted(key));
    uint64_t ver = version ? version : rec->head;
    MDB_val v;
    if (!get(t.get(), db_.values, VersionKey(rec->id, ver).mv(), v))
        throw NotFound("key " + quoted(key) + " has no version " + std::to_string(ver) + " here (head is " +
                       std::to_string(rec->head) + ")");
    return std::string(view(v));
}

std::vector<std::string> LineageImpl::keys() {
    std::vector<std::string> out;
    if (!present_) return out;
    ReadTxn t(env_);
    Cursor c(t.get(), db_.keys);
    MDB_val k, v;
    for (bool ok = c.op(k, v, MDB_FIRST); ok; ok = c.op(k, v, MDB_NEXT)) out.emplace_back(view(k));
    return out;
}

std::vector<VersionRow> LineageImpl::versions(std::string_view key) {
    ReadTxn t(env_);
    auto rec = key_rec(t.get(), key);
    if (!rec) throw NotFound("no lineage key " + quoted(key));
    std::vector<VersionRow> out;
    Cursor c(t.get(), db_.versions);
    VersionKey first(rec->id, 0);
    MDB_val k = first.mv(), v;
    for (bool ok = c.op(k, v, MDB_SET_RANGE); ok; ok = c.op(k, v, MDB_NEXT)) {
        if (k.mv_size != 12) throw Corrupt("a lineage version key is damaged");
        if (std::memcmp(k.mv_data, first.b, 4) != 0) break;  // the next key's versions
        ParsedVersion pv;
        if (!parse_version(v, pv) || pv.kind > LineageOp::observe) throw Corrupt("a lineage version record is damaged");
        VersionRow row;
        row.version = read_be64(static_cast<const unsigned char*>(k.mv_data) + 4);
        row.kind = static_cast<LineageOp::Kind>(pv.kind);
        row.digest = pv.digest;
        InputReader in(pv.inputs);
        InputEntry e;
        while (in.next(e)) row.inputs.emplace_back(std::string(e.name), e.version);
        MDB_val value;
        if (get(t.get(), db_.values, k, value)) row.value.assign(view(value));
        out.push_back(std::move(row));
    }
    return out;
}

// ------------------------------------------------------------------- writes

uint64_t LineageImpl::next_counter(MDB_txn* txn, const char* name) {
    MDB_val v;
    uint64_t next = 1;
    if (get(txn, db_.meta, val(name, std::strlen(name)), v)) {
        if (v.mv_size != 8) throw Corrupt(std::string("lineage counter ") + name + " is damaged");
        next = load<uint64_t>(v.mv_data);
    }
    uint64_t after = next + 1;
    put(txn, db_.meta, val(name, std::strlen(name)), val(&after, 8));
    return next;
}

uint32_t LineageImpl::ensure_owner(MDB_txn* txn, std::string_view owner) {
    if (auto id = owner_id(txn, owner)) return *id;
    uint64_t next = next_counter(txn, kLineageNextOwner.name);
    if (next > UINT32_MAX) throw Error("too many lineage owners");
    uint32_t id = static_cast<uint32_t>(next);
    std::string k = "n";
    k.append(owner);
    put(txn, db_.owners, val(k), val(&id, 4));
    unsigned char ik[5] = {'i'};
    Be32 b(id);
    std::memcpy(ik + 1, b.b, 4);
    put(txn, db_.owners, val(ik, 5), val(owner));
    return id;
}

uint64_t LineageImpl::apply_one(MDB_txn* txn, const LineageOp& op) {
    check_name(op.key, kMaxKeyBytes, "key");
    check_name(op.owner, kMaxOwnerBytes, "owner");
    if (op.value.size() > kMaxValueBytes)
        throw InvalidArgument("value of " + quoted(op.key) + " is " + std::to_string(op.value.size()) +
                              " bytes; the limit is " + std::to_string(kMaxValueBytes));

    // Inputs first: nothing about the key is touched before they validate.
    struct Resolved {
        std::string_view name;
        uint32_t owner;
        uint64_t version;
        ValueDigest digest;
        uint8_t derived;
    };
    std::vector<Resolved> inputs;
    if (op.kind == LineageOp::derive) {
        if (op.inputs.empty())
            throw InvalidArgument("inputs of " + quoted(op.key) + " is empty: a derived item needs at least one input");
        if (op.inputs.size() > kMaxInputs)
            throw InvalidArgument("inputs of " + quoted(op.key) + " has " + std::to_string(op.inputs.size()) +
                                  " entries; the limit is " + std::to_string(kMaxInputs));
        inputs.reserve(op.inputs.size());
        for (const auto& [name, version] : op.inputs) {
            check_name(name, kMaxKeyBytes, "an input key");
            auto rec = key_rec(txn, name);
            if (!rec) throw NotFound("input " + quoted(name) + " of " + quoted(op.key) + " does not exist");
            if (version == 0) throw InvalidArgument("input " + quoted(name) + ": versions start at 1, got 0");
            MDB_val v;
            if (!get(txn, db_.versions, VersionKey(rec->id, version).mv(), v))
                throw NotFound("input " + quoted(name) + " of " + quoted(op.key) + " has no version " +
                               std::to_string(version) + " (head is " + std::to_string(rec->head) + ")");
            ParsedVersion pv;
            if (!parse_version(v, pv)) throw Corrupt("a lineage version record is truncated");
            inputs.push_back(Resolved{name, rec->owner, version, pv.digest, uint8_t(pv.n > 0 ? 1 : 0)});
        }
        std::sort(inputs.begin(), inputs.end(), [](const Resolved& a, const Resolved& b) { return a.name < b.name; });
        for (size_t i = 1; i < inputs.size(); ++i)
            if (inputs[i].name == inputs[i - 1].name)
                throw InvalidArgument("input " + quoted(inputs[i].name) + " is named twice");
    }
    if (op.kind == LineageOp::observe && op.version == 0)
        throw InvalidArgument("observed version of " + quoted(op.key) + " must be at least 1");

    uint32_t owner = ensure_owner(txn, op.owner);
    auto rec = key_rec(txn, op.key);
    KeyRec r{};
    if (rec) {
        r = *rec;
        if (r.owner != owner)
            throw InvalidArgument("key " + quoted(op.key) + " is owned by " + quoted(owner_name(txn, r.owner)) +
                                  ", not " + quoted(op.owner));
    } else {
        uint64_t id = next_counter(txn, kLineageNextKey.name);
        if (id > UINT32_MAX) throw Error("too many lineage keys");
        r = KeyRec{static_cast<uint32_t>(id), owner, 0};
    }

    uint64_t version;
    if (op.restore) {
        version = op.version;
        ValueDigest have;
        if (version == 0) throw InvalidArgument("restored version of " + quoted(op.key) + " must be at least 1");
        if (version_digest(txn, r.id, version, have))
            throw InvalidArgument("version " + std::to_string(version) + " of " + quoted(op.key) +
                                  " is already recorded");
        if (version > r.head) r.head = version;
    } else if (op.kind == LineageOp::observe) {
        version = op.version;
        ValueDigest have;
        if (version_digest(txn, r.id, version, have)) {
            if (have != op.digest)
                throw InvalidArgument("version " + std::to_string(version) + " of " + quoted(op.key) +
                                      " is already recorded with other content");
            return version;  // seen before: nothing to do
        }
        if (version > r.head) r.head = version;
    } else {
        version = r.head + 1;
        r.head = version;
    }

    std::string rec_bytes;
    rec_bytes.reserve(kVersionHeader + inputs.size() * 48);
    rec_bytes.append(reinterpret_cast<const char*>(op.digest.data()), kValueDigestBytes);
    append<uint8_t>(rec_bytes, static_cast<uint8_t>(op.kind));
    append<uint32_t>(rec_bytes, static_cast<uint32_t>(inputs.size()));
    for (const Resolved& in : inputs) {
        append<uint32_t>(rec_bytes, in.owner);
        append<uint64_t>(rec_bytes, in.version);
        rec_bytes.append(reinterpret_cast<const char*>(in.digest.data()), kValueDigestBytes);
        append<uint8_t>(rec_bytes, in.derived);
        append<uint16_t>(rec_bytes, static_cast<uint16_t>(in.name.size()));
        rec_bytes.append(in.name);
    }
    VersionKey vk(r.id, version);
    put(txn, db_.versions, vk.mv(), val(rec_bytes));
    put(txn, db_.values, vk.mv(), val(op.value));
    put(txn, db_.keys, val(op.key), val(&r, sizeof r));
    return version;
}

std::vector<uint64_t> LineageImpl::apply(const std::vector<LineageOp>& ops, bool commit) {
    if (!present_) throw Error("store is open read-only");
    std::vector<uint64_t> out;
    try {
        env_.write([&](MDB_txn* txn) {
            out.clear();  // the map may grow and fn run again
            for (const LineageOp& op : ops) out.push_back(apply_one(txn, op));
            if (!commit) throw DryRun{};
        });
    } catch (const DryRun&) {
    }
    return out;
}

}  // namespace agentsensus
