// SPDX-License-Identifier: Apache-2.0
// Original text written for this project (no third-party content), used to learn the merges of the
// synthetic byte-level BPE vocabulary and the words of the synthetic WordPiece vocabulary.
#include "synth/synthetic_vocab.h"

namespace synapse {

std::string_view synthetic_corpus() {
  return "Once there was a small lighthouse on a rocky island. Every evening the keeper climbed "
         "the stairs, counted the steps, and lit the lamp so the boats could find their way home. "
         "One night the wind was strong and the sea was loud. A little boat with two children "
         "drifted near the rocks. The keeper saw them, turned the light toward the water, and "
         "rang the bell three times. The children heard the bell and rowed toward the light. When "
         "they reached the shore, the keeper gave them warm bread, dry blankets and a cup of tea. "
         "They asked him why he counted the steps every evening. He said that counting helped him "
         "remember that every small step matters, and that the light is only useful when somebody "
         "keeps it burning. In the morning the sky was clear and the water was calm. The children "
         "thanked the keeper, waved from their boat, and sailed back to the village. From that day "
         "on they visited the island every summer, and they learned to count the steps too. "
         "The numbers were simple: 1, 2, 3, 10, 42, 100 and 2024. The lamp used 12 wicks and "
         "the tower had 87 steps. Questions are good; answers are better! \"Why is the sea "
         "salty?\" asked the girl. \"Because rivers carry salt from the rocks,\" said the keeper. "
         "The boy wrote notes in a book: weather, wind, waves, birds, boats and stars. "
         "def count_steps(n):\n    return sum(range(n))\n\nprint(count_steps(87))\n"
         "Time to sleep, said the keeper, and the light kept turning through the long night.";
}

}  // namespace synapse
