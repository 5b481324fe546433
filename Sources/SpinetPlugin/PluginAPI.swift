// The C API of include/spinet_plugin.h (CSpinetPlugin), implemented over
// PluginInstance. In progress: the implementation lands next.
import CSpinetPlugin
