// Lineage's invariants (schema.hpp, lineage tables), each broken one in
// plain words.
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

// ------------------------------------------------------------------- verify

std::vector<std::string> LineageImpl::verify() {
    std::vector<std::string> out;
    if (!present_) return out;
    auto bad = [&](std::string s) {
        if (out.size() < 1000) out.push_back("lineage: " + std::move(s));
    };
    ReadTxn t(env_);
    MDB_txn* txn = t.get();
    auto counter = [&](const char* name) {
        MDB_val v;
        if (!get(txn, db_.meta, val(name, std::strlen(name)), v)) return uint64_t(1);
        if (v.mv_size != 8) {
            bad(std::string("counter ") + name + " is damaged");
            return uint64_t(1);
        }
        return load<uint64_t>(v.mv_data);
    };
    const uint64_t next_key = counter(kLineageNextKey.name), next_owner = counter(kLineageNextOwner.name);

    // Owners: names and ids in both directions.
    std::unordered_map<uint32_t, std::string> owners;
    {
        Cursor c(txn, db_.owners);
        MDB_val k, v;
        for (bool ok = c.op(k, v, MDB_FIRST); ok; ok = c.op(k, v, MDB_NEXT)) {
            std::string_view key = view(k);
            if (key.size() == 5 && key[0] == 'i') {
                uint32_t id = read_be32(key.data() + 1);
                owners[id] = std::string(view(v));
                if (id >= next_owner) bad("owner id " + std::to_string(id) + " is beyond the owner counter");
                std::string back = "n" + std::string(view(v));
                MDB_val b;
                if (!get(txn, db_.owners, val(back), b) || b.mv_size != 4 || load<uint32_t>(b.mv_data) != id)
                    bad("owner " + quoted(view(v)) + " is missing from the owner-name index");
            } else if (key.empty() || key[0] != 'n' || v.mv_size != 4) {
                bad("an owner entry is damaged");
            }
        }
    }

    // Keys: each head names a stored version, with a value, and nothing newer.
    std::unordered_map<uint32_t, std::pair<std::string, KeyRec>> keys;  // by key id
    std::unordered_map<std::string, KeyRec> by_name;
    {
        Cursor c(txn, db_.keys);
        MDB_val k, v;
        for (bool ok = c.op(k, v, MDB_FIRST); ok; ok = c.op(k, v, MDB_NEXT)) {
            std::string name(view(k));
            if (v.mv_size != sizeof(KeyRec)) {
                bad("key " + quoted(name) + " has a damaged record");
                continue;
            }
            KeyRec r = load<KeyRec>(v.mv_data);
            if (!owners.count(r.owner))
                bad("key " + quoted(name) + " is owned by unknown owner id " + std::to_string(r.owner));
            if (r.id >= next_key) bad("key " + quoted(name) + " has an id beyond the key counter");
            if (!keys.emplace(r.id, std::make_pair(name, r)).second)
                bad("key " + quoted(name) + " shares its id with another key");
            by_name[name] = r;
            if (r.head == 0) continue;
            MDB_val hv;
            if (!get(txn, db_.versions, VersionKey(r.id, r.head).mv(), hv))
                bad("key " + quoted(name) + " has head " + std::to_string(r.head) + ", but no such version is stored");
            if (!get(txn, db_.values, VersionKey(r.id, r.head).mv(), hv))
                bad("key " + quoted(name) + " has no value for its head " + std::to_string(r.head));
        }
    }

    // Versions: of a known key, not past its head, with a value, and links
    // to versions that exist, under their keys' owners.
    {
        Cursor c(txn, db_.versions);
        MDB_val k, v;
        for (bool ok = c.op(k, v, MDB_FIRST); ok; ok = c.op(k, v, MDB_NEXT)) {
            if (k.mv_size != 12) {
                bad("a version entry has a damaged key");
                continue;
            }
            uint32_t kid = read_be32(k.mv_data);
            uint64_t ver = read_be64(static_cast<const char*>(k.mv_data) + 4);
            auto it = keys.find(kid);
            if (it == keys.end()) {
                bad("version " + std::to_string(ver) + " belongs to unknown key id " + std::to_string(kid));
                continue;
            }
            const std::string& name = it->second.first;
            std::string at = "version " + std::to_string(ver) + " of " + quoted(name);
            if (ver == 0 || ver > it->second.second.head)
                bad(at + " is past the key's head " + std::to_string(it->second.second.head));
            MDB_val value;
            if (!get(txn, db_.values, k, value)) bad(at + " has no value");
            ParsedVersion pv;
            if (!parse_version(v, pv)) {
                bad(at + " is truncated");
                continue;
            }
            try {
                InputReader ir(pv.inputs);
                InputEntry e;
                uint32_t n = 0;
                while (ir.next(e)) {
                    ++n;
                    std::string link = at + " links to " + quoted(e.name) + " version " + std::to_string(e.version);
                    auto in = by_name.find(std::string(e.name));
                    if (in == by_name.end()) {
                        bad(link + ", an unknown key");
                        continue;
                    }
                    if (in->second.owner != e.owner) bad(link + " under another owner than the key's");
                    MDB_val iv;
                    if (!get(txn, db_.versions, VersionKey(in->second.id, e.version).mv(), iv)) {
                        bad(link + ", which is not stored");
                        continue;
                    }
                    ParsedVersion ip;
                    if (parse_version(iv, ip) && (ip.n > 0) != (e.derived != 0))
                        bad(link + " with the wrong derived flag");
                    if (parse_version(iv, ip) && ip.digest != e.digest) bad(link + " with another digest than it has");
                }
                if (n != pv.n) bad(at + " counts " + std::to_string(pv.n) + " inputs but holds " + std::to_string(n));
            } catch (const DamagedPage&) {
                throw;  // the transaction is unusable: report the page
            } catch (const Corrupt&) {
                bad(at + " has a truncated input list");
            }
        }
    }
    {
        Cursor c(txn, db_.values);
        MDB_val k, v;
        for (bool ok = c.op(k, v, MDB_FIRST); ok; ok = c.op(k, v, MDB_NEXT)) {
            MDB_val probe;
            if (k.mv_size != 12 || !get(txn, db_.versions, k, probe)) bad("a stored value belongs to no version");
        }
    }
    return out;
}

}  // namespace agentsensus
