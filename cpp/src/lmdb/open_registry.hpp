// One open per store per process, and no use after fork().
//
// LMDB forbids opening one environment twice in a process: the second open
// takes its own fcntl locks on lock.mdb, which POSIX does not separate from
// the first's, so it believes it is alone and resets the shared lock table,
// and closing either one drops the other's locks. Two writers on one file
// then lose acknowledged writes. An LMDB environment is not usable in a
// forked child either.
//
// The guard is keyed on the identity (device, inode) of the store's
// directory, taken before LMDB opens anything: a symlink, a bind mount or a
// relative path reach the same directory under another name and are still
// one store. The data file's inode is no key (it does not exist before the
// first open, and compact replaces it), nor is the store uuid (reading it
// needs the open this guards, and a byte copy of a store shares it).
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>

namespace agentsensus {

// Counts the forks this process descends from: 0 in the process that
// started, +1 in each child (a pthread_atfork handler). An object opened at
// generation g is used in a forked child when fork_generation() != g; the
// check is one atomic load, no system call.
uint64_t fork_generation();

// A claim on one store directory for this process, held while an Env (or a
// compaction) uses it. Move-only; releasing an empty claim does nothing.
class OpenClaim {
public:
    enum class Purpose { open, compact };
    OpenClaim() = default;
    // Claims dir (which must exist) for this process. Throws Error naming
    // the path that holds it when this process already holds a claim on the
    // same directory. Claims inherited from a parent process (before fork)
    // do not count: the child cannot use them.
    OpenClaim(const std::string& dir, Purpose purpose);
    ~OpenClaim() { release(); }
    OpenClaim(OpenClaim&& o) noexcept;
    OpenClaim& operator=(OpenClaim&& o) noexcept;
    OpenClaim(const OpenClaim&) = delete;
    OpenClaim& operator=(const OpenClaim&) = delete;

    void release();

private:
    dev_t dev_ = 0;
    ino_t ino_ = 0;
    uint64_t token_ = 0;  // 0: no claim
};

}  // namespace agentsensus
