# Copy a header tree to a path that stays, file by file and only where the
# content differs, so that an unchanged header keeps its time stamp and
# nothing that includes it is recompiled.
#
# pybind11 sits in pip's temporary build environment, whose path is new on
# every `pip install .`: compiling against it there would change every
# binding's command line, and ninja recompiles a file whose command changed.

function(agentsensus_stable_headers from to)
  file(GLOB_RECURSE files RELATIVE "${from}" "${from}/*")
  foreach(f IN LISTS files)
    set(dst "${to}/${f}")
    if(EXISTS "${dst}")
      file(SHA256 "${from}/${f}" have)
      file(SHA256 "${dst}" kept)
      if(have STREQUAL kept)
        continue()
      endif()
    endif()
    get_filename_component(dir "${dst}" DIRECTORY)
    file(COPY "${from}/${f}" DESTINATION "${dir}")
  endforeach()
endfunction()
