/* Compiles against the installed collscope/tracer/fusion.h; without the preload the call does nothing. */
#include <collscope/tracer/fusion.h>

#include <stdio.h>

int main(void) {
  static char buffer[64];
  collscope_fusion_pack(buffer, 0, sizeof buffer);
  puts("collscope_fusion_pack: ok without the preload");
  return 0;
}
