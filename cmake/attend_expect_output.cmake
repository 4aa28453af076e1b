# Runs a program (cmake -P): PROGRAM, ARGS (a ;-list), EXPECT_FILE (its stdout, byte for byte),
# EXPECT_ERR (a regular expression its stderr must match). The program must end with status 0.
execute_process(COMMAND ${PROGRAM} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} ${ARGS} ended with ${rc}:\n${err}")
endif()
file(READ ${EXPECT_FILE} want)
if(NOT out STREQUAL want)
  message(FATAL_ERROR "${PROGRAM} ${ARGS} printed\n[${out}]\ninstead of\n[${want}]")
endif()
if(NOT err MATCHES "${EXPECT_ERR}")
  message(FATAL_ERROR "${PROGRAM} ${ARGS}: stderr lacks '${EXPECT_ERR}':\n${err}")
endif()
message(STATUS "${out}${err}")
