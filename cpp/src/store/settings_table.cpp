#include "store/settings_table.hpp"

#include "agentsensus/errors.hpp"
#include "format/schema.hpp"

namespace agentsensus {

SettingsTable::SettingsTable(Env& env) {
    try {
        dbi_ = env.open_db(kSettingsTable.name, kSettingsTable.flags);
    } catch (const Corrupt&) {
        if (!env.readonly()) throw;
        present_ = false;  // a store from before the table, opened read-only
    }
}

std::optional<std::string> SettingsTable::get(Env& env, std::string_view name) {
    if (!present_) return std::nullopt;
    ReadTxn t(env);
    MDB_val v;
    if (!agentsensus::get(t.get(), dbi_, val(name), v)) return std::nullopt;
    return std::string(view(v));
}

void SettingsTable::set(Env& env, std::string_view name, std::string_view value) {
    if (name.empty() || name.size() > 64) throw InvalidArgument("a setting's name must be 1 to 64 characters");
    for (char c : name)
        if (c <= ' ' || c > '~') throw InvalidArgument("a setting's name must be printable ASCII");
    if (value.size() > 4096) throw InvalidArgument("a setting's value must be at most 4096 bytes");
    env.write([&](MDB_txn* txn) { put(txn, dbi_, val(name), val(value)); });
}

std::vector<std::pair<std::string, std::string>> SettingsTable::all(Env& env) {
    std::vector<std::pair<std::string, std::string>> out;
    if (!present_) return out;
    ReadTxn t(env);
    Cursor c(t.get(), dbi_);
    MDB_val k, v;
    bool more = c.op(k, v, MDB_FIRST);
    while (more) {
        out.emplace_back(std::string(view(k)), std::string(view(v)));
        more = c.op(k, v, MDB_NEXT);
    }
    return out;
}

}  // namespace agentsensus
