# usearch's C++ headers from its PyPI sdist (the wheel ships none).
agentsensus_fetch_sdist(usearch 2.26.6
  eefb8dc019ad5a184f6089b22f20b91b3961720e504e97ba2718ad62ed65674b USEARCH_SDIST)

add_library(agentsensus_usearch INTERFACE)
target_include_directories(agentsensus_usearch SYSTEM INTERFACE "${USEARCH_SDIST}/include")
target_compile_definitions(agentsensus_usearch INTERFACE
  USEARCH_USE_OPENMP=0 USEARCH_USE_NUMKONG=0 USEARCH_USE_FP16LIB=0)
