# Configures, builds and runs the consumer project (cmake -P). Variables: MODE, SOURCE, BINARY,
# PREFIX, ATTEND_SOURCE, ARGS.
file(REMOVE_RECURSE ${BINARY})
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE} -B ${BINARY} ${ARGS} -DATTEND_CONSUMER_MODE=${MODE}
                        -DCMAKE_PREFIX_PATH=${PREFIX} -DATTEND_SOURCE_DIR=${ATTEND_SOURCE}
                COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BINARY} COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND ${BINARY}/consumer RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "consumer (${MODE}) computed wrong numbers (exit ${rc})")
endif()
