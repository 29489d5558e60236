# Embeds the built-in data (hardware profiles, model specs, scenarios) into the planner library
# so `infer-plan --hw h200` works wherever the binary is copied.
function(infer_plan_embed_data OUTPUT)
  file(GLOB_RECURSE _files CONFIGURE_DEPENDS
       RELATIVE ${PROJECT_SOURCE_DIR}
       ${PROJECT_SOURCE_DIR}/hwprofiles/*.json ${PROJECT_SOURCE_DIR}/scenarios/*.json)
  list(SORT _files)
  set(_abs)
  foreach(_f ${_files})
    list(APPEND _abs ${PROJECT_SOURCE_DIR}/${_f})
  endforeach()
  string(REPLACE ";" "|" _joined "${_files}")
  add_custom_command(
    OUTPUT ${OUTPUT}
    COMMAND ${CMAKE_COMMAND} -DROOT=${PROJECT_SOURCE_DIR} "-DFILES=${_joined}" -DOUT=${OUTPUT}
            -P ${PROJECT_SOURCE_DIR}/cmake/embed_files.cmake
    DEPENDS ${_abs} ${PROJECT_SOURCE_DIR}/cmake/embed_files.cmake
    COMMENT "Embedding ${CMAKE_MATCH_COUNT} built-in data files"
    VERBATIM)
endfunction()
