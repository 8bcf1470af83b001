/**
 * Binds the MembershipStore conformance suite to the memory store, the embedded store (PGlite,
 * in memory) and the postgres store (a fresh database of the test server; without a server
 * `freshDatabase` throws, so that suite fails — it never skips).
 */
import { makeMemoryMembershipStore } from '../src/persistence/membership/MemoryMembershipStore.ts'
import { describeMembershipConformance } from '../src/persistence/membership/MembershipConformance.ts'
import { makePgliteDriver } from '../src/persistence/sql/PgliteDriver.ts'
import { openPostgresMembershipStore, openSqlMembershipStore } from '../src/persistence/membership/sql/SqlMembershipStore.ts'
import { freshDatabase } from './harness/database.ts'

describeMembershipConformance('memory', async () => makeMemoryMembershipStore())
describeMembershipConformance('embedded (PGlite)', async () => openSqlMembershipStore(await makePgliteDriver()))
describeMembershipConformance('postgres', async () => openPostgresMembershipStore({ connectionString: await freshDatabase('membership') }))
