"""FastPath's batch calls (batch.py): the compiled loops of kernels/batch.py on one workspace."""

from ..algorithms import completion
from ..algorithms.contacts import contact_set_key
from ..algorithms.lcaba import DEFAULT_SETTINGS
from ..forward_dynamics import LCABA_RESIDUAL
from ..kernels import batch as batch_kernels
from ..kernels.checks import REFER
from .compilation import ENTRY_POINTS


class BatchCalls:
    """The batch kernels of a FastPath (a base of it): batch() for the calls split over threads,
    batch_completion() for completion's rows tracked one from another."""

    def batch(self, name, contacts=None, weights=None):
        """The batch kernel (kernels/batch.py) of the public call name on this workspace:
        run(*inputs, out) -> (rule code, rows done), method 'auto''s first method for
        forward_dynamics (LCABA at its settings where the model starts with it); a whole-body
        term's kernel on this workspace's buffers; contact_bias_forces' on contacts with weights
        (checked ny), None until a call on this workspace has resolved them (or for contacts that
        are no contact set: the single call names them)."""
        done = self._done
        if name in batch_kernels.TERMS:
            kernel, term = batch_kernels.TERMS[name]
            kernel = getattr(self, '_batch_' + kernel)
            prefix = (self._x, self.whole_body().handle, term)
        elif name == 'contact_bias_forces':
            try:
                entry = self._contact_sets.get(contact_set_key(contacts))
            except TypeError:          # unhashable: the single call names the contacts
                entry = None
            if entry is None or entry.calls is None:
                return None
            kernel = self._batch_contact_bias_forces
            prefix = (entry.context, entry.calls._b, weights)
        elif name == 'forward_dynamics':
            lcaba = self.model.auto_lcaba
            if lcaba and (self._settings is not DEFAULT_SETTINGS
                          or self._residual != LCABA_RESIDUAL):
                self._use_settings(DEFAULT_SETTINGS, LCABA_RESIDUAL)
            kernel, prefix = self._batch_forward_dynamics, (self._x, lcaba)
        elif name == 'regressor':
            kernel, prefix = self._batch_regressor, (self._x, self.whole_body().handle)
        else:
            kernel, prefix = getattr(self, '_batch_' + name), (self._x,)

        def run(*arrays):
            code = kernel(*prefix, *arrays, done)
            return code, int(done[0])
        return run

    def batch_completion(self, q_independent, previous, out):
        """Model.complete_positions of each row of q_independent (N x independent_q) into out,
        each tracked from the row before, the first from previous (None: from the reference):
        (rule code, rows done), kernels/batch.complete_positions. A completion left pending by a
        time budget goes to the single call (rows done 0)."""
        if not ENTRY_POINTS:
            self.warm_up()
        if self._pending is not None:
            return REFER, 0
        tracked = previous is not None
        code = self._batch_complete_positions(
            self._x, completion.MAX_CONTINUATION_STEPS // completion.CHUNK_STEPS,
            previous if tracked else self.checks.reference, tracked, q_independent, out,
            self._done)
        return code, int(self._done[0])
