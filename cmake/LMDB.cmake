# LMDB 0.9.x from the py-lmdb sdist (lib/, not lib1/: 1.0's file format is
# incompatible), with py-lmdb's hardening patches for hostile files applied,
# then ours (lmdb-validate-pages.patch: every page read from the map is
# checked before use), compiled in statically with hidden symbols.

agentsensus_fetch_sdist(lmdb 3.0.0
  06dda0723545e14d56ac7dcd6f582d9922c2ed5e16f1c3f8d0e670a96ec2ee65 LMDB_SDIST)

set(LMDB_SRC "${CMAKE_BINARY_DIR}/_lmdb-0.9")
# The same patch series, in the same order, as py-lmdb's setup.py applies.
set(LMDB_PATCHES
  env-copy-txn cursor-next-prev-uninitialized cve-2019-16224-validate-db-flags
  cve-2019-16225-reject-dirty-pages cve-2019-16226-validate-node-del-size
  cve-2019-16227-guard-xcursor-null cve-2019-16228-validate-psize
  validate-page-bounds validate-node-read-size validate-subpage-bounds
  validate-xcursor-nodedsz validate-leaf2-keysize guard-xcursor-null-d3d4
  validate-nodedsz-page-split validate-node-shrink-delta validate-overflow-pages
  validate-nodedsz-cursor-put validate-md-depth validate-md-root win32-sparse-file
  fix-large-write fix-overflow-page-size-mul validate-md-pad validate-ovpage-free
  validate-freedb-record)

# The sources are prepared again when our patch changes.
set(LMDB_OWN_PATCH "${CMAKE_CURRENT_LIST_DIR}/lmdb-validate-pages.patch")
file(SHA256 "${LMDB_OWN_PATCH}" LMDB_STAMP)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${LMDB_OWN_PATCH}")
set(LMDB_PREPARED "")
if(EXISTS "${LMDB_SRC}/.prepared")
  file(READ "${LMDB_SRC}/.prepared" LMDB_PREPARED)
endif()
if(NOT LMDB_PREPARED STREQUAL LMDB_STAMP)
  file(REMOVE_RECURSE "${LMDB_SRC}")
  file(COPY "${LMDB_SDIST}/lib/" DESTINATION "${LMDB_SRC}"
       FILES_MATCHING PATTERN "*.c" PATTERN "*.h" PATTERN "py-lmdb" EXCLUDE
       PATTERN "win32*" EXCLUDE)
  find_program(PATCH_EXE patch)
  if(PATCH_EXE)
    foreach(p IN LISTS LMDB_PATCHES ITEMS validate-pages)
      if(p STREQUAL "validate-pages")
        set(file "${LMDB_OWN_PATCH}")
      else()
        set(file "${LMDB_SDIST}/lib/py-lmdb/${p}.patch")
      endif()
      execute_process(COMMAND "${PATCH_EXE}" -N -s -p3 -d "${LMDB_SRC}"
                      INPUT_FILE "${file}" RESULT_VARIABLE rc)
      if(NOT rc EQUAL 0)
        message(FATAL_ERROR "agentsensus: LMDB patch ${p} failed to apply")
      endif()
    endforeach()
    file(WRITE "${LMDB_SRC}/.patched" "")
  else()
    message(WARNING "agentsensus: no `patch` program; LMDB is built without "
                    "py-lmdb's hardening patches and ours for damaged files")
  endif()
  file(WRITE "${LMDB_SRC}/.prepared" "${LMDB_STAMP}")
endif()

add_library(agentsensus_lmdb STATIC "${LMDB_SRC}/mdb.c" "${LMDB_SRC}/midl.c")
target_include_directories(agentsensus_lmdb SYSTEM PUBLIC "${LMDB_SRC}")
set_target_properties(agentsensus_lmdb PROPERTIES
  POSITION_INDEPENDENT_CODE ON C_VISIBILITY_PRESET hidden)
target_compile_options(agentsensus_lmdb PRIVATE -w -O2)
find_package(Threads REQUIRED)
target_link_libraries(agentsensus_lmdb PUBLIC Threads::Threads)
