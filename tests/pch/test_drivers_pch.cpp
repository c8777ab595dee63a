// The translation unit that the test drivers' shared precompiled headers are built from
// (tests/CMakeLists.txt: plab_test_pch, plab_gui_test_pch); it holds nothing of its own.
