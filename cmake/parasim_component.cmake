# parasim_add_component(<name> SOURCES <src>... [DEPENDS <target>...])
#
# One component = one static library parasim_<name> (alias parasim::<name>) built from the
# explicit SOURCES, with its public headers under <name>/include/parasim/<name>/, linking
# DEPENDS publicly (in the order given) and the warning policy privately.
function(parasim_add_component name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "" "SOURCES;DEPENDS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "parasim_add_component(${name}): unexpected arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  add_library(parasim_${name} ${ARG_SOURCES})
  add_library(parasim::${name} ALIAS parasim_${name})
  target_include_directories(parasim_${name} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include)
  target_link_libraries(parasim_${name} PUBLIC ${ARG_DEPENDS} PRIVATE parasim::warnings)
endfunction()
