/**
 * DispatchMutations — bugs planted in the claim protocol itself: each is the dispatch machine
 * (src/machines/DispatchMachine.ts) with one named guard or action replaced through `provide`,
 * as a developer might get that piece of the protocol wrong. Every one of them is a stall, not a
 * loss: the job is still delivered once a later scan, lapse or timeout repairs it, so the
 * prompt-delivery and claims-reach-a-worker checkers see them, and the dispatch checker
 * (DispatchChecker.ts) a poll left matching jobs for nobody, which costs statements rather than
 * time, claims left parked on an engine the queue's partitions left, and a job kept for a later
 * claim while a job behind it in claim order runs.
 *
 * The simulator hands the variant to every engine of a world (`dispatchMachine` of the engine's
 * parts); the unmutated machine is `dispatchMachine` itself.
 */
import { enqueueActions } from 'xstate'
import { type DispatchMachine, dispatchMachine } from '../../src/machines/DispatchMachine.ts'

/** The dispatch bugs the simulator can plant, by name. */
export type DispatchMutation =
  /** No due-time pass once a job that came through Matching reached its claim (claims that found nothing behind it wait for the scan). */
  | 'noPassBehindMatching'
  /** The pass behind a Matching job runs only for this engine's own claims, not for polls forwarded here. */
  | 'passIgnoresForwarded'
  /** A claim set aside for an enqueue whose key was held never goes back to the line: only a line poll can reach it. */
  | 'setAsideClaimLost'
  /** A pass does not reopen a drained store: claims skip the store until a job comes through Matching. */
  | 'drainedStaysDrained'
  /** A claim that parks while no line poll runs starts none: jobs with Matching do not reach it. */
  | 'parkedPollNotArmed'
  /** A line poll matched a job nobody waits for keeps running: it takes every job the next pass adds to Matching, for nobody. */
  | 'matchedPollLingers'
  /**
   * A dispatch counts as empty though claims wait in line (and park on its line polls), so a pass
   * drops it while they wait: the next dispatch of the queue knows nothing of them, no pass
   * serves them or asks Matching for them, and they wait out their own timeouts.
   */
  | 'droppedWithClaimsInLine'
  /** A freed concurrency slot is not announced: the jobs of its key wait for the next scan while workers idle. */
  | 'slotFreedSilent'
  /**
   * The dispatch never hears that the queue's last partition instance on its engine unloaded (its
   * partitions moved away): the claims parked in its line and the polls other engines forwarded
   * there wait out their claims on an engine that no longer delivers the queue, while jobs wait
   * at the new owner.
   */
  | 'partitionUnloadUnheard'
  /**
   * A claim set aside for an enqueue whose key was held goes back to the line without asking for
   * a pass, though one ran while it was set aside and passed it by: the rows that pass found due
   * wait for the claim's own next look (a second) or another pass.
   */
  | 'setAsidePassedBy'
  /**
   * A closing engine keeps what is handed to it as an open one would (a job an enqueue inserted
   * claimed for its idle worker, a hand-over from another engine's enqueue): no worker of its
   * takes the job and no pass of its gives it back, so the job waits out its claim.
   */
  | 'closingKeepsHanded'
  /**
   * A Matching delivery whose job a claim straight from the store took first asks for no pass: the
   * poll it was for (another engine's, forwarded here) waits on, a row short, while jobs are due
   * behind it, until its own timeout or the next pass.
   */
  | 'staleDeliveryUnheard'
  /**
   * A claim handed a job while its own store statement was out always answers its own job and
   * hands the other on, or keeps it for the next claim: when the one handed was the head (of a
   * higher priority, or claimed by a due-time pass whose statement ran beside the claim's own and
   * passed over the rows that one held), it waits while the job behind it runs.
   */
  | 'headOfTwoKept'
  /**
   * A claim that a due-time pass handed a job while its own store statement was out, with no
   * other claim waiting, answers the one of the two the records rank first (its own, within a
   * priority) and keeps the other for the next claim, instead of giving both back and claiming
   * the head: the two statements ran side by side, and the kept one may be the head.
   */
  | 'passBesideKept'
  /**
   * A claim handed a job through Matching while its own statement was out ranks the two by
   * priority alone: within one it answers its own and keeps the one from Matching, which claim
   * order puts first.
   */
  | 'matchedHandedKept'
  /**
   * Once the head statements beside a short answer have all ended, no pass runs: the rows one of
   * them held and did not take (a claim holds the first row of each of its heads and takes only
   * the one ahead) are due with nobody told, and the claims that answer sent to wait wait for the
   * next scan.
   */
  | 'heldRowsUnheard'

/** Every dispatch mutation, in the menu's order. */
export const dispatchMutations: ReadonlyArray<DispatchMutation> = ['noPassBehindMatching', 'passIgnoresForwarded', 'setAsideClaimLost', 'drainedStaysDrained', 'parkedPollNotArmed', 'matchedPollLingers', 'droppedWithClaimsInLine', 'slotFreedSilent', 'partitionUnloadUnheard', 'setAsidePassedBy', 'closingKeepsHanded', 'staleDeliveryUnheard', 'headOfTwoKept', 'passBesideKept', 'matchedHandedKept', 'heldRowsUnheard']

/** The dispatch machine with `mutation` planted. */
export function mutatedDispatchMachine(mutation: DispatchMutation): DispatchMachine {
  switch (mutation) {
    case 'heldRowsUnheard':
      return dispatchMachine.provide({ actions: { passForHeld: () => {} } }) as DispatchMachine
    case 'matchedHandedKept':
      return dispatchMachine.provide({ guards: { handedIsAhead: ({ event }) => event.type === 'claim.heldTwo' && event.handed.priority > event.own.priority } }) as DispatchMachine
    case 'passBesideKept':
      return dispatchMachine.provide({ guards: { mustSettleHead: () => false } }) as DispatchMachine
    case 'headOfTwoKept':
      return dispatchMachine.provide({ guards: { mustSettleHead: () => false, handedIsAhead: () => false } }) as DispatchMachine
    case 'staleDeliveryUnheard':
      return dispatchMachine.provide({ actions: { passForStale: () => {} } }) as DispatchMachine
    case 'closingKeepsHanded':
      return dispatchMachine.provide({ guards: { isEngineClosing: () => false } }) as DispatchMachine
    case 'setAsidePassedBy':
      return dispatchMachine.provide({ guards: { passRanWhileSetAside: () => false } }) as DispatchMachine
    case 'partitionUnloadUnheard':
      return dispatchMachine.provide({ guards: { isLastPartition: () => false } }) as DispatchMachine
    case 'noPassBehindMatching':
      return dispatchMachine.provide({ actions: { requestPass: () => {} } }) as DispatchMachine
    case 'passIgnoresForwarded':
      return dispatchMachine.provide({ guards: { hasClaimsWaiting: ({ context }) => context.waiting.length > 0 } }) as DispatchMachine
    case 'setAsideClaimLost':
      return dispatchMachine.provide({
        actions: {
          releaseClaim: enqueueActions(({ context, event, enqueue }) => {
            if (event.type !== 'claim.released') return
            enqueue.assign({ reserved: context.reserved.filter((claim) => claim.claimId !== event.claimId) })
          }),
        },
      }) as DispatchMachine
    case 'drainedStaysDrained':
      return dispatchMachine.provide({ guards: { passReopensStore: () => false } }) as DispatchMachine
    case 'parkedPollNotArmed':
      return dispatchMachine.provide({
        actions: {
          parkClaim: enqueueActions(({ context, event, enqueue }) => {
            if (event.type !== 'claim.parked') return
            enqueue.assign({ parked: [...context.parked, event.claimId] })
          }),
        },
      }) as DispatchMachine
    case 'matchedPollLingers':
      return dispatchMachine.provide({ guards: { nobodyWaitsForMatch: () => false } }) as DispatchMachine
    case 'slotFreedSilent':
      return dispatchMachine.provide({ actions: { announceSlot: () => {} } }) as DispatchMachine
    case 'droppedWithClaimsInLine':
      return dispatchMachine.provide({
        guards: { isHoldingNothing: ({ context }) => context.reserved.length + context.spare.length + context.closingPolls.length + context.forwardedWaiting + context.lazyPolls === 0 },
      }) as DispatchMachine
  }
}
