#include "agentsensus/compact.hpp"

#include <fcntl.h>
#include <lmdb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "agentsensus/errors.hpp"
#include "lmdb/data_file.hpp"
#include "lmdb/lmdb_env.hpp"
#include "lmdb/open_registry.hpp"

namespace agentsensus {

namespace {

struct Fd {
    int fd = -1;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

struct EnvHandle {
    MDB_env* env = nullptr;
    ~EnvHandle() {
        if (env) mdb_env_close(env);
    }
};

uint64_t file_size(const std::string& path) {
    struct stat st;
    return stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

void fsync_path(const std::string& path, int flags) {
    Fd f{::open(path.c_str(), flags)};
    if (f.fd < 0 || ::fsync(f.fd) != 0) throw Error("cannot fsync " + path + ": " + std::strerror(errno));
}

// LMDB's compacting copy writes each live page whole, and a page's free
// middle (between its node pointers, ending at lower, and its nodes,
// starting at upper) can still hold the bytes of nodes deleted earlier: a key
// can hold a forgotten record's words (the lexical index's keys are words)
// and cannot be overwritten before its delete as values are (scrub_del). So
// the copy's branch and leaf pages get that middle zeroed before it replaces
// the store; nothing reads it (cpp/src/lmdb/page_check.cpp checks that every node
// starts at or after upper). Page layout as there: flags at byte 10, lower
// and upper at 12 and 14 (an overflow run's page count at 12), a 16-byte
// header; pages 0 and 1 are the meta pages.
void zero_free_middles(const std::string& path, size_t psize) {
    constexpr uint16_t kBranch = 0x01, kLeaf = 0x02, kOverflow = 0x04, kLeaf2 = 0x20;
    constexpr size_t kHdr = 16;
    Fd f{::open(path.c_str(), O_RDWR | O_CLOEXEC)};
    if (f.fd < 0) throw Error("cannot open " + path + ": " + std::strerror(errno));
    const uint64_t pages = file_size(path) / psize;
    std::vector<unsigned char> page(psize);
    for (uint64_t pg = 2; pg < pages;) {
        const off_t at = static_cast<off_t>(pg * psize);
        if (::pread(f.fd, page.data(), psize, at) != static_cast<ssize_t>(psize))
            throw Error("cannot read " + path + ": " + std::strerror(errno));
        uint16_t flags, lower, upper;
        std::memcpy(&flags, page.data() + 10, 2);
        if (flags & kOverflow) {  // a run of pages holding one value: skip it whole
            uint32_t run;
            std::memcpy(&run, page.data() + 12, 4);
            pg += run ? run : 1;
            continue;
        }
        ++pg;
        if (!(flags & (kBranch | kLeaf)) || (flags & kLeaf2)) continue;
        std::memcpy(&lower, page.data() + 12, 2);
        std::memcpy(&upper, page.data() + 14, 2);
        if (lower < kHdr || lower >= upper || upper > psize) continue;
        bool dirty = false;
        for (size_t i = lower; i < upper && !dirty; ++i) dirty = page[i] != 0;
        if (!dirty) continue;
        std::memset(page.data() + lower, 0, upper - lower);
        if (::pwrite(f.fd, page.data(), psize, at) != static_cast<ssize_t>(psize))
            throw Error("cannot write " + path + ": " + std::strerror(errno));
    }
}

}  // namespace

CompactResult compact_store(const std::string& dir) {
    const std::string data = dir + "/data.mdb", tmp = dir + "/compact.tmp", copy = tmp + "/data.mdb";
    struct stat st;
    if (stat(data.c_str(), &st) != 0) throw NotFound("no store in " + dir);
    // Refused while this process has the store open, and no open starts
    // meanwhile: closing the lock file below would drop an open Env's locks.
    OpenClaim claim(dir, OpenClaim::Purpose::compact);

    // LMDB's open lock: every process with the environment open holds byte 0
    // of lock.mdb shared; an opener first tries it exclusively. Holding it
    // exclusively proves no one else has the store open and makes new
    // openers wait until the swap is done.
    Fd lock{::open((dir + "/lock.mdb").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)};
    if (lock.fd < 0) throw Error("cannot open " + dir + "/lock.mdb: " + std::strerror(errno));
    struct flock fl;
    std::memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = 0;
    fl.l_len = 1;
    if (fcntl(lock.fd, F_SETLK, &fl) != 0)
        throw Error("the store at " + dir + " is open in another process: close it there before compacting");

    guard_data_file(dir, true);
    CompactResult res;
    res.before = file_size(data);
    {
        EnvHandle e;
        int rc = mdb_env_create(&e.env);
        if (rc) throw_lmdb(rc, "mdb_env_create");
        mdb_env_set_maxdbs(e.env, 64);
        // NOLOCK: the lock file is ours (above); RDONLY: compaction only reads.
        rc = mdb_env_open(e.env, dir.c_str(), MDB_RDONLY | MDB_NOLOCK | MDB_NORDAHEAD, 0644);
        if (rc) throw_lmdb(rc, ("mdb_env_open(" + dir + ")").c_str());
        // A copy left by an interrupted compaction is stale: start over.
        std::remove(copy.c_str());
        if (mkdir(tmp.c_str(), 0755) != 0 && errno != EEXIST)
            throw Error("cannot create " + tmp + ": " + std::strerror(errno));
        rc = mdb_env_copy2(e.env, tmp.c_str(), MDB_CP_COMPACT);
        if (rc) {
            std::remove(copy.c_str());
            rmdir(tmp.c_str());
            throw_lmdb(rc, "mdb_env_copy2(compact)");
        }
        MDB_stat ms;
        rc = mdb_env_stat(e.env, &ms);
        if (rc) throw_lmdb(rc, "mdb_env_stat");
        zero_free_middles(copy, ms.ms_psize);
    }
    // The copy must be on disk before it replaces the original, and the
    // rename on disk before we report success.
    fsync_path(copy, O_RDONLY);
    if (std::rename(copy.c_str(), data.c_str()) != 0)
        throw Error("cannot replace " + data + ": " + std::strerror(errno));
    fsync_path(dir, O_RDONLY | O_DIRECTORY);
    rmdir(tmp.c_str());
    res.after = file_size(data);
    return res;
}

}  // namespace agentsensus
