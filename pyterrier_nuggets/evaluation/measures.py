"""Which measures the package reports by default: one list for the joint table, the main job and
``RAGEvaluation`` in pt.Experiment. The measures themselves are declared in :mod:`ir_measures_ext`."""
import ir_measures

import ir_measures_ext

NUGGET_MEASURES = ir_measures_ext.NUGGET_MEASURES  # V_strict, V, W_strict, W, A_strict, A
ANSWER_MEASURES = (ir_measures_ext.V_strict, ir_measures_ext.A_strict, ir_measures_ext.W,
                   ir_measures_ext.SupportP, ir_measures_ext.SupportR, ir_measures_ext.AnswerWords)
RETRIEVAL_MEASURES = (ir_measures.nDCG @ 10,)

# which value of a measure is the best one, for a table's bold: the highest, except where less is better; none for a
# quantity with no better direction (an answer's length)
LOWER_IS_BETTER = frozenset({"RubricFailedMandatory"})
NO_BEST = frozenset({"AnswerWords"})
