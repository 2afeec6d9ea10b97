# Fetch a pinned source release from PyPI through pip, check its sha256, and
# unpack it under the build directory. Nothing third-party lives in git.
#
# Offline builds: set AGENTSENSUS_SDIST_DIR to a folder that already holds the
# sdist tarballs (for example one filled by `pip download --no-binary :all:`).

function(agentsensus_fetch_sdist name version sha256 out_dir)
  set(cache "${CMAKE_BINARY_DIR}/_sdists")
  set(tarball "${cache}/${name}-${version}.tar.gz")
  set(src "${cache}/${name}-${version}")
  file(MAKE_DIRECTORY "${cache}")

  if(EXISTS "${tarball}")
    file(SHA256 "${tarball}" have)
    if(NOT have STREQUAL sha256)
      file(REMOVE "${tarball}")
      file(REMOVE_RECURSE "${src}")
    endif()
  endif()

  if(NOT EXISTS "${tarball}" AND DEFINED ENV{AGENTSENSUS_SDIST_DIR})
    set(local "$ENV{AGENTSENSUS_SDIST_DIR}/${name}-${version}.tar.gz")
    if(EXISTS "${local}")
      message(STATUS "agentsensus: ${name} ${version} from ${local}")
      file(COPY "${local}" DESTINATION "${cache}")
    endif()
  endif()

  if(NOT EXISTS "${tarball}")
    message(STATUS "agentsensus: downloading ${name}==${version} sdist with pip")
    execute_process(
      COMMAND "${Python_EXECUTABLE}" -m pip download --no-deps --no-binary :all:
              --no-build-isolation --disable-pip-version-check -q
              "${name}==${version}" -d "${cache}"
      RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0 OR NOT EXISTS "${tarball}")
      message(FATAL_ERROR
        "agentsensus: could not fetch ${name}==${version} with pip (exit ${rc}).\n"
        "${out}${err}\n"
        "For an offline build, put ${name}-${version}.tar.gz in a folder and "
        "set AGENTSENSUS_SDIST_DIR to it.")
    endif()
  endif()

  file(SHA256 "${tarball}" have)
  if(NOT have STREQUAL sha256)
    file(REMOVE "${tarball}")
    message(FATAL_ERROR "agentsensus: ${name}-${version}.tar.gz has sha256 ${have}, expected ${sha256}")
  endif()

  if(NOT EXISTS "${src}/.unpacked")
    file(REMOVE_RECURSE "${src}")
    file(ARCHIVE_EXTRACT INPUT "${tarball}" DESTINATION "${cache}")
    file(TOUCH "${src}/.unpacked")
  endif()
  set(${out_dir} "${src}" PARENT_SCOPE)
endfunction()
