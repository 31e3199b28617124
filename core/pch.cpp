// The translation unit rig's precompiled header is built in (CMakeLists.txt: rig_pch).
