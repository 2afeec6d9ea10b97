// Small named settings a store keeps beside its identity (kSettingsTable):
// today the name of the embedder it was created with, so that a reopen
// without one can use it. The engine stores the values; it does not read them.
#pragma once
#include <lmdb.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lmdb/lmdb_env.hpp"

namespace agentsensus {

class SettingsTable {
public:
    // Opens the table; called while no other transaction runs. A read-only
    // open of a store that predates it has no settings.
    explicit SettingsTable(Env& env);

    std::optional<std::string> get(Env& env, std::string_view name);
    // Sets name to value in a transaction of its own (InvalidArgument for a
    // name that is not 1 to 64 printable ASCII characters).
    void set(Env& env, std::string_view name, std::string_view value);
    // Every (name, value), in name order (export).
    std::vector<std::pair<std::string, std::string>> all(Env& env);

private:
    bool present_ = true;
    MDB_dbi dbi_ = 0;
};

}  // namespace agentsensus
