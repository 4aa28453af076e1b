# attend_compile_fail_test(<source>): registers compile_fail.<name>.good and .bad (see
# attend_check_compile_fail.cmake) with the compiler and flags of this build. The .good check (the
# program is valid without the error) runs with g++ only: it tests the test program, not a
# diagnostic, and with clang++ it cost CI about 80 s of compilation (2026-11-29).
function(attend_compile_fail_test source)
  get_filename_component(name ${source} NAME_WE)
  get_target_property(boost_inc Boost::headers INTERFACE_INCLUDE_DIRECTORIES)
  get_target_property(xsimd_inc xsimd INTERFACE_INCLUDE_DIRECTORIES)
  set(includes ${PROJECT_SOURCE_DIR}/include ${boost_inc} ${xsimd_inc})
  set(flags -Wall -Wextra -Wpedantic -Werror)
  if(ATTEND_NATIVE)
    list(APPEND flags -march=native)
  endif()
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    list(APPEND flags -Wno-maybe-uninitialized -Wno-uninitialized)
  endif()
  set(modes bad)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    set(modes good bad)
  endif()
  foreach(mode IN LISTS modes)
    add_test(NAME compile_fail.${name}.${mode}
             COMMAND ${CMAKE_COMMAND} -DCXX=${CMAKE_CXX_COMPILER} -DSOURCE=${source} "-DINCLUDES=${includes}"
                     "-DFLAGS=${flags}" -DMODE=${mode} -P ${PROJECT_SOURCE_DIR}/cmake/attend_check_compile_fail.cmake)
  endforeach()
endfunction()
