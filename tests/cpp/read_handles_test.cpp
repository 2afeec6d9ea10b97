// Idle read handles (Env::reader, Env::idle in cpp/src/lmdb/lmdb_env.hpp):
// a ReadTxn renews a handle an earlier one left, reads the newest commit
// through it, and the environment keeps at most 16 of them, each holding its
// reader slot and no snapshot.
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "check.hpp"
#include "lmdb/lmdb_env.hpp"
#include "temp_dir.hpp"

using namespace agentsensus;

namespace {

// This process's slots in the reader table: (held, of which holding a snapshot).
std::pair<int, int> own_slots(Env& env) {
    struct Count {
        std::string pid;
        int held = 0, reading = 0;
    } count{std::to_string(getpid()), 0, 0};
    // One line per slot in use: "pid thread txnid", txnid "-" when reset.
    mdb_reader_list(
        env.raw(),
        [](const char* line, void* ctx) {
            auto* c = static_cast<Count*>(ctx);
            std::string l(line);
            size_t start = l.find_first_not_of(' ');
            size_t end = l.find(' ', start);
            if (start == std::string::npos || l.substr(start, end - start) != c->pid) return 0;
            ++c->held;
            if (l.find(" -") == std::string::npos) ++c->reading;
            return 0;
        },
        &count);
    return {count.held, count.reading};
}

std::string read_value(Env& env, MDB_dbi dbi) {
    ReadTxn t(env);
    MDB_val v;
    if (!get(t.get(), dbi, val("k"), v)) return "";
    return std::string(view(v));
}

void write_value(Env& env, MDB_dbi dbi, const std::string& value) {
    env.write([&](MDB_txn* txn) { put(txn, dbi, val("k"), val(value)); });
}

// n read transactions open at once.
std::vector<std::unique_ptr<ReadTxn>> readers(Env& env, int n) {
    std::vector<std::unique_ptr<ReadTxn>> open;
    for (int i = 0; i < n; ++i) open.push_back(std::make_unique<ReadTxn>(env));
    return open;
}

}  // namespace

TEST(a_renewed_handle_reads_the_newest_commit) {
    TempDir dir;
    Env env(dir.path(), Env::Options{});
    MDB_dbi dbi = env.open_db("t", 0);
    write_value(env, dbi, "one");
    CHECK_EQ(read_value(env, dbi), std::string("one"));
    CHECK_EQ(own_slots(env).first, 1);  // the handle that read it, idle now
    for (int i = 0; i < 50; ++i) {
        write_value(env, dbi, "v" + std::to_string(i));
        CHECK_EQ(read_value(env, dbi), "v" + std::to_string(i));
    }
    CHECK_EQ(own_slots(env).first, 1);   // one handle, renewed each time
    CHECK_EQ(own_slots(env).second, 0);  // and no snapshot held between reads
}

TEST(at_most_sixteen_handles_stay_idle) {
    TempDir dir;
    Env env(dir.path(), Env::Options{});
    MDB_dbi dbi = env.open_db("t", 0);
    write_value(env, dbi, "x");
    auto open = readers(env, 24);
    CHECK_EQ(own_slots(env).first, 24);
    CHECK_EQ(own_slots(env).second, 24);
    open.clear();
    CHECK_EQ(own_slots(env).first, 16);
    CHECK_EQ(own_slots(env).second, 0);
    // Readers at once take the idle handles first, then new ones.
    open = readers(env, 20);
    CHECK_EQ(own_slots(env).first, 20);
    open.clear();
    CHECK_EQ(own_slots(env).first, 16);
}

TEST(closing_the_environment_frees_the_idle_handles) {
    TempDir dir;
    {
        Env env(dir.path(), Env::Options{});
        write_value(env, env.open_db("t", 0), "x");
        readers(env, 4).clear();
        CHECK_EQ(own_slots(env).first, 4);
    }
    // The lock file outlives the environment: another open reads its table.
    Env again(dir.path(), Env::Options{});
    CHECK_EQ(own_slots(again).first, 0);
    CHECK_EQ(read_value(again, again.open_db("t", 0)), std::string("x"));
}

int main() { return check::run_all(); }
