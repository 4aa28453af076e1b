# Runs a program that must stop (cmake -P): PROGRAM, ARG, EXPECT (a regular expression its stderr
# must match), optionally OUTPUT (a file for its stdout, such as /dev/full). The program must not
# end normally: a precondition failure ends in abort(); with EXIT_CODE it must end with that exit
# status (a program that refuses its input: not a signal, not a crash). Optionally COPY and COPY_TO (a file copied
# before the run) and ENV_VARS (VAR=value entries added to the program's environment).
if(DEFINED COPY)
  file(COPY_FILE ${COPY} ${COPY_TO})
endif()
set(launcher)
if(DEFINED ENV_VARS)
  set(launcher ${CMAKE_COMMAND} -E env ${ENV_VARS})
endif()
if(DEFINED OUTPUT)
  execute_process(COMMAND ${launcher} ${PROGRAM} ${ARG} RESULT_VARIABLE rc OUTPUT_FILE ${OUTPUT} ERROR_VARIABLE err)
else()
  execute_process(COMMAND ${launcher} ${PROGRAM} ${ARG} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
endif()
if(rc EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} ${ARG} ended normally; it must stop\n${out}${err}")
endif()
if(DEFINED EXIT_CODE AND NOT rc STREQUAL "${EXIT_CODE}")
  message(FATAL_ERROR "${PROGRAM} ${ARG} ended with '${rc}', not the exit status ${EXIT_CODE}:\n${err}")
endif()
if(NOT err MATCHES "${EXPECT}")
  message(FATAL_ERROR "${PROGRAM} ${ARG} stopped (${rc}) without the expected message '${EXPECT}':\n${err}")
endif()
message(STATUS "stopped (${rc}): ${err}")
