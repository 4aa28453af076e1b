// The one Boost.Test module of the unit tests: the linked library, or its header-only variant
// where the target has no library (cross builds, ATTEND_BOOST_TEST_HEADER_ONLY in tests/CMakeLists.txt).
#define BOOST_TEST_MODULE attend
#ifdef ATTEND_BOOST_TEST_HEADER_ONLY
#include <boost/test/included/unit_test.hpp>
#else
#include <boost/test/unit_test.hpp>
#endif
