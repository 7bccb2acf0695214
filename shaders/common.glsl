// common.glsl: what every vkt shader shares: dtype extensions and the linear invocation id over a
// grid that vkt_groups_for split across x and y to stay within maxComputeWorkGroupCount.
#ifndef VKT_COMMON_GLSL
#define VKT_COMMON_GLSL

#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_shader_8bit_storage : enable
#extension GL_EXT_shader_16bit_storage : enable
#extension GL_EXT_control_flow_attributes : enable

#ifndef LOCAL_SIZE // invocations a workgroup; a shader's host may choose otherwise
#define LOCAL_SIZE 256
#endif
layout(local_size_x = LOCAL_SIZE) in;

uint linear_id() {
  return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * LOCAL_SIZE + gl_LocalInvocationID.x;
}

#endif
