// Checks on an LMDB data file before LMDB maps it. LMDB trusts its file: a
// data.mdb shorter than its own metadata says makes every read of a missing
// page a SIGBUS that kills the process. These checks turn that into an error.
#pragma once
#include <string>

namespace agentsensus {

// Reads both meta pages of dir/data.mdb (if the file exists and is not
// empty) and makes sure the newest one's pages lie inside the file. A
// shorter file is extended with zero pages when writable (LMDB allows a file
// to end before its last free pages, and zero pages read as damaged, not as
// a crash); when read-only it is refused with Corrupt.
void guard_data_file(const std::string& dir, bool writable);

}  // namespace agentsensus
