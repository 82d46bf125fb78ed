#include "parasim/models/graph.hpp"
